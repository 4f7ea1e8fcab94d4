"""``guardian status``: active alerts, pending ladder steps, reclaimed workloads, refused
alerts — from a running controller (``--url``) or a state database; with ``--live``, the
cluster as it is now."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from guardian.adapters.status_api import fetch_status
from guardian.app.remediation.status import StatusReport
from guardian.app.remediation.status_cluster import StatusRequest, run_status
from guardian.cli._common import EXIT_OK, SubParsers, add_kube_options, add_state_options, failure
from guardian_common.errors import ConfigError, GuardianError


def register(subparsers: SubParsers) -> None:
    text = "list active alerts, pending ladder steps, reclaimed workloads and refused alerts"
    parser = subparsers.add_parser("status", help=text, description=text)
    add_state_options(parser)
    parser.add_argument(
        "--url", help="ask a running controller (e.g. http://gpu-guardian:9469); any replica"
    )
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
    if args.url:
        return _remote(args.url, args.json)
    request = StatusRequest(args.state, args.config, args.live, args.kubeconfig, args.context)
    try:
        report = run_status(request, os.environ)
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        return failure("guardian status", exc)
    return _print(report, args.json)


def _print(report: StatusReport, as_json: bool) -> int:
    print(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    return EXIT_OK


def _remote(url: str, as_json: bool) -> int:
    """Ask a running controller: any replica answers from the same shared state."""
    try:
        data = fetch_status(url)
    except GuardianError as exc:
        return failure("guardian status", exc)

    def items(key: str) -> list[dict[str, Any]]:
        return list(data.get(key) or [])

    report = StatusReport(
        alerts=items("alerts"),
        pending=items("pending"),
        reclaimed=items("reclaimed"),
        refused=items("refused"),
        holds=items("holds"),
        misconfigured=items("misconfigured"),
        gave_up=items("gave_up"),
    )
    return _print(report, as_json)
