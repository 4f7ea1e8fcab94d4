"""``guardian simulate``: what the rule pack and the policies would have done over history."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from guardian.adapters.kube.credentials import KubeAccessError
from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.history.fetch import ChunkFailedError
from guardian.app.remediation.build import command_credentials
from guardian.app.rules.build import prometheus_access
from guardian.app.settings.config_file import load_settings
from guardian.app.simulate.printout import render_json, render_text
from guardian.app.simulate.simulation import Clients, SimulateOptions, Simulation
from guardian.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    SubParsers,
    add_kube_options,
    config_required,
    usage_error,
)
from guardian.cli._history import (
    add_metrics_option,
    add_range_arguments,
    duration,
    make_progress,
    parse_range,
)
from guardian_common.errors import ConfigError, GuardianError

_PROG = "guardian simulate"


def register(subparsers: SubParsers) -> None:
    text = "replay the rule pack and the reclaim policies over history: what would they have done?"
    p = subparsers.add_parser("simulate", help=text, description=text)
    add_range_arguments(p, since="7d")
    p.add_argument(
        "--policies", nargs="+", metavar="FILE", help="policy files (default: the config's)"
    )
    p.add_argument(
        "--from-cluster",
        action="store_true",
        help="read workloads, labels and exclusions from the cluster (default: from the series)",
    )
    add_kube_options(p)  # with --from-cluster
    p.add_argument("--step", help="evaluate every group at this interval (default: its own)")
    p.add_argument(
        "--horizon",
        default="1d",
        help="busy again within this after a reclaim counts as regret (default 1d)",
    )
    p.add_argument(
        "--busy-threshold",
        type=float,
        default=0.05,
        help="utilization (0-1) that counts as busy (default 0.05, the idle rule's floor)",
    )
    add_metrics_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.set_defaults(handler=run_simulate)


def run_simulate(args: argparse.Namespace) -> int:
    if not args.config:
        return config_required(_PROG)
    try:
        span = parse_range(args, time.time())
        options = SimulateOptions(
            since=span.since,
            until=span.until,
            step=duration(args.step, "--step") if args.step else None,
            horizon=duration(args.horizon, "--horizon"),
            busy_threshold=args.busy_threshold,
            chunk_seconds=span.chunk,
            policy_files=tuple(args.policies) if args.policies else None,
            from_cluster=args.from_cluster,
            credentials=(
                command_credentials(args.kubeconfig, args.context, args.config, os.environ)
                if args.from_cluster
                else None
            ),
            metrics=args.metrics,
        )
    except ValueError as exc:
        return usage_error(_PROG, exc)
    try:
        settings = load_settings(args.config, os.environ)
    except ConfigError as exc:
        return usage_error(_PROG, f"invalid configuration:\n{exc}")
    querier = PrometheusQuerier(prometheus_access(settings))
    progress = make_progress(args.progress, "simulate")
    try:
        result = Simulation(settings, options, Clients(querier), progress=progress).run()
    except (ConfigError, KubeAccessError) as exc:
        return usage_error(_PROG, exc)
    except (ChunkFailedError, GuardianError) as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        querier.close()
    if args.json:
        print(json.dumps(render_json(result), indent=2))
    else:
        print(render_text(result), end="")
    return EXIT_OK
