"""Kubernetes I/O for remediation: the cluster reader, the executor, events and the lease."""
