"""``guardian policies check FILES...``: validate ReclaimPolicy files and report overlaps."""

from __future__ import annotations

import argparse
import sys

from guardian.app.remediation.policy_files import check_report
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, config_error
from guardian_common.errors import ConfigError


def register(subparsers: SubParsers) -> None:
    text = "validate reclaim policy files and report overlapping policies"
    parser = subparsers.add_parser("check", help=text, description=text)
    parser.add_argument("files", nargs="+", metavar="FILE", help="policy files (globs allowed)")
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    try:
        count, lines, problems = check_report(args.files)
    except ConfigError as exc:
        return config_error("guardian policies check", exc)
    for line in lines:
        print(line)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) found", file=sys.stderr)
        return EXIT_FAILURE
    print(f"ok: {count} policy(ies), no ambiguous overlap")
    return EXIT_OK
