"""``guardian status``: active alerts, pending ladder steps, reclaimed workloads, refused
alerts; with ``--live``, the cluster as it is now."""

from __future__ import annotations

import argparse
import json
import os
import sys

from guardian.adapters.kube.credentials import KubeAccessError
from guardian.app.remediation.status import StatusRequest, run_status
from guardian.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    EXIT_USAGE,
    SubParsers,
    add_kube_options,
    add_state_options,
)
from guardian_common.errors import GuardianError


def register(subparsers: SubParsers) -> None:
    text = "list active alerts, pending ladder steps, reclaimed workloads and refused alerts"
    parser = subparsers.add_parser("status", help=text, description=text)
    add_state_options(parser)
    parser.add_argument(
        "--live",
        action="store_true",
        help="also read the cluster now: the kill switch, each reclaimed workload's replicas "
        "(implied by --kubeconfig and --context)",
    )
    add_kube_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    # Prints its own outcome and failures: logs only from warnings up, unless asked.
    parser.set_defaults(handler=run, quiet_log_level="WARNING")


def run(args: argparse.Namespace) -> int:
    request = StatusRequest(args.state, args.config, args.live, args.kubeconfig, args.context)
    try:
        report = run_status(request, os.environ)
    except KubeAccessError as exc:
        print(f"guardian status: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except GuardianError as exc:
        print(f"guardian status: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(json.dumps(report.to_json(), indent=2) if args.json else report.render())
    return EXIT_OK
