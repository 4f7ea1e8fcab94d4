"""``guardian restore NAMESPACE/KIND/NAME``: undo a reclaim, exactly."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from guardian.adapters.kube.executor import Executor
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.ledger import Ledger
from guardian.app.remediation.build import kube_api_client
from guardian.app.remediation.restore import parse_target, restore_workload
from guardian.app.settings.config_file import load_settings
from guardian.cli._common import EXIT_FAILURE, EXIT_OK
from guardian_common.errors import ConfigError, GuardianError

SubParsers = argparse._SubParsersAction


def add_state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="controller config (for its state_path)")
    parser.add_argument("--state", help="state database (default: the config's state_path)")


def state_path(args: argparse.Namespace) -> str | None:
    if args.state:
        return str(args.state)
    if args.config:
        return load_settings(args.config, os.environ).state_path
    return None


def register(subparsers: SubParsers[argparse.ArgumentParser]) -> None:
    text = "restore a reclaimed workload: exact replicas, unsuspend, clear annotations"
    parser = subparsers.add_parser("restore", help=text, description=text)
    parser.add_argument("target", metavar="NAMESPACE/KIND/NAME", help="e.g. ml/Deployment/train")
    parser.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig file (default: $KUBECONFIG, else the in-cluster service account)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change; change nothing"
    )
    add_state_options(parser)
    parser.set_defaults(handler=run_restore)


def run_restore(args: argparse.Namespace) -> int:
    api_client: Any = None
    ledger: Ledger | None = None
    try:
        path = state_path(args)
        ledger = Ledger.open(path) if path else None
        api_client = kube_api_client(args.kubeconfig)
        rest = KubeRest(api_client)
        reader = KubeReader(rest)
        ref = parse_target(args.target, reader)
        message = restore_workload(
            ref,
            reader,
            Executor(rest, reader, instance="guardian-cli"),
            ledger,
            time.time(),
            dry_run=args.dry_run,
        )
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        print(f"guardian restore: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        if api_client is not None:
            api_client.close()
        if ledger is not None:
            ledger.close()
    print(f"{ref}: {message}")
    return EXIT_OK
