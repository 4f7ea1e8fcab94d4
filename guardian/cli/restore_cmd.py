"""``guardian restore NAMESPACE/KIND/NAME``: undo a reclaim, exactly.
``guardian restore --all``: every workload the controller reclaimed, one line each (first
step of an uninstall, with ``--remove-annotations``; docs/deploy.md, "Uninstall")."""

from __future__ import annotations

import argparse
import os
import sys
import time

from guardian.app.remediation.restore import RestoreRequest, run_restore
from guardian.app.remediation.restore_all import run_restore_all, summary
from guardian.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    SubParsers,
    add_kube_options,
    add_state_options,
    failure,
    usage_error,
)
from guardian_common.errors import ConfigError, GuardianError


def register(subparsers: SubParsers) -> None:
    text = "restore a reclaimed workload: exact replicas, unsuspend, clear annotations"
    parser = subparsers.add_parser("restore", help=text, description=text)
    parser.add_argument(
        "target", nargs="?", metavar="NAMESPACE/KIND/NAME", help="e.g. ml/Deployment/train"
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="every workload in the cluster that carries gpu-guardian.io/reclaimed-at",
    )
    parser.add_argument(
        "--remove-annotations",
        action="store_true",
        help="with --all: then remove every gpu-guardian.io annotation from workloads, pods "
        "and namespaces (an uninstall)",
    )
    add_kube_options(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change; change nothing"
    )
    add_state_options(parser)
    # Prints its own outcome and failures: logs only from warnings up, unless asked.
    parser.set_defaults(handler=run, quiet_log_level="WARNING")


def _usage(args: argparse.Namespace) -> str | None:
    if args.all and args.target:
        return "give NAMESPACE/KIND/NAME or --all, not both"
    if not args.all and not args.target:
        return "give NAMESPACE/KIND/NAME, or --all"
    if args.remove_annotations and not args.all:
        return "--remove-annotations goes with --all"
    return None


def _request(args: argparse.Namespace) -> RestoreRequest:
    return RestoreRequest(
        target=args.target or "",
        kubeconfig=args.kubeconfig,
        state=args.state,
        config=args.config,
        dry_run=args.dry_run,
        context=args.context,
    )


def run(args: argparse.Namespace) -> int:
    usage = _usage(args)
    if usage is not None:
        return usage_error("guardian restore", usage)
    if args.all:
        return run_all(args)
    try:
        ref, message = run_restore(_request(args), os.environ, time.time())
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        return failure("guardian restore", exc)
    print(f"{ref}: {message}")
    return EXIT_OK


def run_all(args: argparse.Namespace) -> int:
    prog = "guardian restore --all"
    try:
        outcome, running = run_restore_all(
            _request(args), os.environ, time.time(), remove_annotations=args.remove_annotations
        )
    except ConfigError:
        raise
    except GuardianError as exc:
        return failure(prog, exc)
    if running is not None:
        print(
            f"{prog}: warning: the controller still runs (Lease held by {running}) and may "
            'reclaim again: stop it first (docs/deploy.md, "Uninstall")',
            file=sys.stderr,
        )
    for line in outcome.lines:
        print(str(line), file=sys.stderr if line.failed else sys.stdout)
    for text in summary(outcome, dry_run=args.dry_run):
        print(f"{prog}: {text}", file=sys.stderr)
    return EXIT_FAILURE if outcome.failed else EXIT_OK
