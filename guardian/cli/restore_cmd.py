"""``guardian restore NAMESPACE/KIND/NAME``: undo a reclaim, exactly."""

from __future__ import annotations

import argparse
import os
import time

from guardian.app.remediation.restore import RestoreRequest, run_restore
from guardian.cli._common import (
    EXIT_OK,
    SubParsers,
    add_kube_options,
    add_state_options,
    failure,
)
from guardian_common.errors import ConfigError, GuardianError


def register(subparsers: SubParsers) -> None:
    text = "restore a reclaimed workload: exact replicas, unsuspend, clear annotations"
    parser = subparsers.add_parser("restore", help=text, description=text)
    parser.add_argument("target", metavar="NAMESPACE/KIND/NAME", help="e.g. ml/Deployment/train")
    add_kube_options(parser)
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change; change nothing"
    )
    add_state_options(parser)
    # Prints its own outcome and failures: logs only from warnings up, unless asked.
    parser.set_defaults(handler=run, quiet_log_level="WARNING")


def run(args: argparse.Namespace) -> int:
    request = RestoreRequest(
        target=args.target,
        kubeconfig=args.kubeconfig,
        state=args.state,
        config=args.config,
        dry_run=args.dry_run,
        context=args.context,
    )
    try:
        ref, message = run_restore(request, os.environ, time.time())
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        return failure("guardian restore", exc)
    print(f"{ref}: {message}")
    return EXIT_OK
