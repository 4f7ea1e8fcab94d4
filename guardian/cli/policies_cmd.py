"""``guardian policies check [--effective] FILES...``: validate policy files and report
overlaps (``--effective``: each policy as it acts, a team's with what it inherits);
``guardian policies crd``: print the CustomResourceDefinitions."""

from __future__ import annotations

import argparse
import sys

import yaml

from guardian.app.remediation.policy_files import check_report
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, config_error
from guardian.model.policies_crd import crds
from guardian_common.errors import ConfigError
from guardian_common.words import plural


def register(subparsers: SubParsers) -> None:
    text = "validate reclaim policy files and report overlapping policies"
    parser = subparsers.add_parser("check", help=text, description=text)
    parser.add_argument("files", nargs="+", metavar="FILE", help="policy files (globs allowed)")
    parser.add_argument(
        "--effective",
        action="store_true",
        help="also print every value of each policy as it acts, and where it comes from "
        "(its file and line, the cluster policy a team's policy inherits it from, or the "
        "default)",
    )
    parser.set_defaults(handler=run_check)
    text = "print the ClusterReclaimPolicy and ReclaimPolicy CustomResourceDefinitions (YAML)"
    crd = subparsers.add_parser("crd", help=text, description=text)
    crd.set_defaults(handler=run_crd)


def run_crd(_args: argparse.Namespace) -> int:
    print(yaml.safe_dump_all(crds(), sort_keys=False), end="")
    return EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    try:
        count, lines, problems = check_report(args.files, effective=args.effective)
    except ConfigError as exc:
        return config_error("guardian policies check", exc)
    for line in lines:
        print(line)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        print(f"{plural(len(problems), 'problem')} found", file=sys.stderr)
        return EXIT_FAILURE
    print(f"ok: {count} policy(ies), no ambiguous overlap")
    return EXIT_OK
