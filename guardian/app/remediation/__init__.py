"""Remediation wiring: settings, the loop the engine feeds, restore, status, leader election."""
