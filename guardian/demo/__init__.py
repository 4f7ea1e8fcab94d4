"""``guardian demo``: the whole loop on a simulated fleet (see docs/demo.md)."""

from guardian.demo.run import DemoRequest, run_demo

__all__ = ["DemoRequest", "run_demo"]
