"""``guardian status``: active alerts, pending ladder steps, reclaimed workloads, from a
running controller (``--url``) or a state database."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from guardian.adapters.ledger import Ledger
from guardian.adapters.status_api import fetch_status
from guardian.app.remediation.status import StatusReport, build_status
from guardian.cli._common import EXIT_FAILURE, EXIT_OK
from guardian.cli.restore_cmd import add_state_options, state_path
from guardian_common.errors import GuardianError

SubParsers = argparse._SubParsersAction


def register(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
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
        path = state_path(args)
        if path is None:
            print("guardian status: give --config or --state", file=sys.stderr)
            return EXIT_FAILURE
        if not Path(path).exists():
            print(f"guardian status: no state database at {path}", file=sys.stderr)
            return EXIT_FAILURE
        ledger = Ledger.open(path)
        try:
            report = build_status(ledger)
        finally:
            ledger.close()
    except GuardianError as exc:
        print(f"guardian status: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return _print(report, args.json)


def _print(report: StatusReport, as_json: bool) -> int:
    print(json.dumps(report.to_json(), indent=2) if as_json else report.render())
    return EXIT_OK
