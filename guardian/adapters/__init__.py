"""The only code that talks to the outside: Prometheus, Kubernetes, Slack and the state store."""
