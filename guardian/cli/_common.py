"""Shared pieces for subcommand modules."""

from __future__ import annotations

import argparse
import sys
from importlib import metadata
from typing import TypeAlias

from guardian_common.errors import ConfigError

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 2  # a bad flag, variable or file: the same status as a usage error, as documented


def config_error(prog: str, exc: ConfigError) -> int:
    """Print each finding of ``exc`` on one line of stderr; the status for a config error."""
    for line in str(exc).splitlines():
        print(f"{prog}: {line}", file=sys.stderr)
    return EXIT_CONFIG


def package_version() -> str:
    try:
        return metadata.version("gpu-guardian")
    except metadata.PackageNotFoundError:
        return "unknown"


def add_state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="controller config (for its state_path)")
    parser.add_argument("--state", help="state database (default: the config's state_path)")


def add_kube_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        help="kubeconfig file (default: the --config's, else in-cluster, $KUBECONFIG, "
        "~/.kube/config)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: its current context)")
