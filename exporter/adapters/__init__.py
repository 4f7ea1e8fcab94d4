"""Backends that read the node: NVML, /proc, the Kubernetes API and the kubelet."""
