"""GPU Guardian controller: rule engine, policies and remediation for Kubernetes GPU fleets."""
