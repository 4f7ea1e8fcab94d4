"""``python -m testbed.node``: the exporter's own command line on a simulated node.

Every flag and command of ``guardian-exporter`` works the same; ``serve`` reads its GPUs
from ``--scenario FILE`` instead of the NVIDIA driver and, without ``--proc-root``, the
scenario's own processes stand in for /proc. The product never imports this: tests,
benchmarks and the demo start it as they would start the exporter.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from exporter.adapters.procfs import ProcReader
from exporter.app.collection import NodeSources
from exporter.app.serve import SourcesFactory
from exporter.app.settings import ExporterSettings
from exporter.cli import EXIT_USAGE, build_parser
from exporter.cli import main as exporter_main
from testbed.node.scenario import load_scenario
from testbed.node.scenario_backend import ScenarioCgroups, SimulatedBackend

PROG = "python -m testbed.node"


def scenario_sources(path: Path) -> NodeSources:
    """A scenario's GPUs and processes; the scenario is read strictly (ConfigError)."""
    scenario = load_scenario(path)
    return NodeSources(SimulatedBackend(scenario, time.time), ScenarioCgroups(scenario))


def _sources(path: Path) -> SourcesFactory:
    def build(settings: ExporterSettings) -> NodeSources:
        node = scenario_sources(path)
        if settings.proc_root is None:
            return node
        return NodeSources(node.backend, ProcReader(settings.proc_root))

    return build


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--scenario", type=Path)
    known, rest = pre.parse_known_args(args)
    parser = build_parser(PROG)
    if "serve" in rest and known.scenario is None:
        print(f"{PROG}: serve needs --scenario FILE (a scenario YAML)", file=sys.stderr)
        return EXIT_USAGE
    if known.scenario is None:
        return exporter_main(rest, parser=parser)
    return exporter_main(rest, parser=parser, sources=_sources(known.scenario))


if __name__ == "__main__":
    sys.exit(main())
