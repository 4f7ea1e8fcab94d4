"""Remediation in the app layer: building it, the loop the engine feeds, the step path
it shares with ``guardian restore``, status, policy files and leader election."""
