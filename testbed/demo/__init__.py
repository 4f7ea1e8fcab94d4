"""The demo (``make demo``): the whole loop on a simulated fleet (see docs/demo.md)."""

from testbed.demo.run import DemoRequest, run_demo

__all__ = ["DemoRequest", "run_demo"]
