"""Kubernetes I/O for remediation: the cluster reader, the executor, Events, and the
REST layer they (and app's Lease elector) speak through."""
