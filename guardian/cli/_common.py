"""Shared pieces for subcommand modules."""

from __future__ import annotations

import argparse
from importlib import metadata
from typing import TypeAlias

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


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
