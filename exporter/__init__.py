"""GPU Guardian node exporter: per-GPU and per-pod GPU metrics for Prometheus."""
