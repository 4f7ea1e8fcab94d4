"""promtool's rule unit-test format (``promtool test rules``), as pure code.

The test-file model, the series notation, the evaluation schedule and the comparison
of expected with actual alerts and samples. The harness that runs a file against a
real Prometheus and the engine lives in ``guardian.app.promtest``.
"""
