"""``guardian rules test FILES...``: promtool-format rule tests, run through the engine."""

from __future__ import annotations

import argparse
import os
import sys

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.app.promtest import FileResult, Status, run_test_file
from guardian.cli._common import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, SubParsers
from guardian_common.errors import GuardianError
from guardian_common.words import plural


def register(subparsers: SubParsers) -> None:
    text = "run promtool-format rule tests through the engine"
    parser = subparsers.add_parser(
        "test",
        help=text,
        description=(
            f"{text}: each test group's input series are backfilled into a temporary "
            "Prometheus, the engine evaluates the rules at every evaluation_interval "
            "step, and the alerts and PromQL results are compared as promtool does. "
            "Needs `prometheus` and `promtool` on PATH. Tests that use `stale` are "
            "reported as unsupported."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="promtool test files")
    parser.set_defaults(handler=run_tests)


def _report(result: FileResult) -> None:
    print("Unit Testing: ", result.path, flush=True)
    for warning in result.warnings:
        print(warning, file=sys.stderr)
    if result.errors:
        print("  FAILED:", file=sys.stderr)
        for error in result.errors:
            print(error, file=sys.stderr)
    failed = [g for g in result.groups if g.status is Status.FAILED]
    unsupported = [g for g in result.groups if g.status is Status.UNSUPPORTED]
    if failed:
        print("  FAILED:", file=sys.stderr)
        for group in failed:
            for message in group.messages:
                print(message, file=sys.stderr)
                print()
    for group in unsupported:
        print(f"  UNSUPPORTED: {group.name or '(unnamed test group)'}", file=sys.stderr)
        for message in group.messages:
            print(message, file=sys.stderr)
    if result.ok:
        print("  SUCCESS")
    print(flush=True)


def run_tests(args: argparse.Namespace) -> int:
    # Only a path that does not exist: a FIFO, a device or a folder is the bounded
    # reader's to refuse, with what it is. The other files are still run.
    missing = [path for path in args.files if not os.path.lexists(path)]
    for path in missing:
        print(f"{path}: cannot read: no such test file", file=sys.stderr)
    files = [path for path in args.files if path not in missing]
    if not files:
        return EXIT_CONFIG  # nothing ran: no "0 test groups" summary
    try:
        binaries = PrometheusBinaries.find()
    except GuardianError as exc:
        print(f"guardian rules test: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    counts = dict.fromkeys(Status, 0)
    ok = True
    unloadable = False
    for path in files:
        result = run_test_file(path, binaries)
        _report(result)
        ok = ok and result.ok
        unloadable = unloadable or bool(result.errors)
        for group in result.groups:
            counts[group.status] += 1
    summary = ", ".join(f"{counts[s]} {s.value}" for s in Status)
    print(f"{plural(sum(counts.values()), 'test group')}: {summary}")
    if unloadable or missing:  # a file (or its rule files) could not be loaded
        return EXIT_CONFIG
    return EXIT_OK if ok else EXIT_FAILURE
