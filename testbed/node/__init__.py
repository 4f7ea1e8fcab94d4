"""Simulated node parts for tests, benchmarks and the demo.

Scenario-driven GPUs and a stub NVML library.
"""
