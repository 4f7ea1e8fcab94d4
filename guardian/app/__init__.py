"""Wiring: builds adapters from settings, runs the scheduler loop and the executor."""
