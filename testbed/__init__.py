"""The test bed: the stand-ins beside GPU Guardian's two programs, and the demo.

Fake Kubernetes API and Slack servers that speak the real wire protocols, Alertmanager and
Thanos runners, the simulated node (scenario GPUs, a stub NVML library, a fake kubelet) and
the demo that wires them all. Tests, benchmarks and ``make demo`` use it; neither program
imports it (an import-linter contract) and the container image does not carry it.
"""
