"""Real local stand-ins for the outside world, shared by tests, benchmarks and the demo.

Each one speaks the real wire protocol (or is the real program, as with
Prometheus), so the real client libraries run against it.
"""
