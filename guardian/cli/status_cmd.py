"""``guardian status``: active alerts, pending ladder steps, reclaimed workloads, from a
running controller (``--url``) or a state database."""

from __future__ import annotations

import argparse
import json
import os
import sys

from guardian.adapters.status_api import fetch_status
from guardian.app.remediation.build import state_database
from guardian.app.remediation.status import StatusReport, read_status
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, add_state_options
from guardian_common.errors import ConfigError, GuardianError


def register(subparsers: SubParsers) -> None:
    text = "list active alerts, pending ladder steps and reclaimed workloads"
    parser = subparsers.add_parser("status", help=text, description=text)
    add_state_options(parser)
    parser.add_argument(
        "--url", help="ask a running controller (e.g. http://gpu-guardian:9469); any replica"
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    if args.url:
        try:
            data = fetch_status(args.url)
        except GuardianError as exc:
            print(f"guardian status: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        keys = ("alerts", "pending", "reclaimed")
        return _print(StatusReport(**{k: list(data.get(k) or []) for k in keys}), args.json)
    try:
        path = state_database(args.state, args.config, os.environ)
        if path is None:
            print("guardian status: give --config or --state", file=sys.stderr)
            return EXIT_FAILURE
        report = read_status(path)
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        print(f"guardian status: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return _print(report, args.json)


def _print(report: StatusReport, as_json: bool) -> int:
    print(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    return EXIT_OK
