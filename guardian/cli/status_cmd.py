"""``guardian status``: active alerts, pending ladder steps, reclaimed workloads."""

from __future__ import annotations

import argparse
import json
import os
import sys

from guardian.app.remediation.build import state_database
from guardian.app.remediation.status import read_cluster_status, read_status
from guardian.app.settings.config_file import load_settings
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, add_state_options
from guardian_common.errors import GuardianError


def register(subparsers: SubParsers) -> None:
    text = "list active alerts, pending ladder steps and reclaimed workloads"
    parser = subparsers.add_parser("status", help=text, description=text)
    add_state_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run_status)


def run_status(args: argparse.Namespace) -> int:
    try:
        path = state_database(args.state, args.config, os.environ)
        if path is None:
            print("guardian status: give --config or --state", file=sys.stderr)
            return EXIT_FAILURE
        remediation = load_settings(args.config, os.environ).remediation if args.config else None
        if remediation is not None and remediation.enabled:  # the ladder as every replica sees it
            report = read_cluster_status(remediation, path)
        else:
            report = read_status(path)
    except GuardianError as exc:
        print(f"guardian status: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(json.dumps(report.to_json(), indent=2) if args.json else report.render())
    return EXIT_OK
