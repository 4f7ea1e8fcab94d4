"""Shared pieces for subcommand modules."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import metadata
from typing import TypeAlias

from guardian.adapters.kube.credentials import KubeAccessError
from guardian_common.errors import ConfigError, GuardianError

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


def usage_error(prog: str, message: object) -> int:
    """Print ``message`` on stderr after ``prog``; the status for a usage error."""
    print(f"{prog}: {message}", file=sys.stderr)
    return EXIT_USAGE


def config_required(prog: str) -> int:
    """The usage error of a command given neither --config nor $GUARDIAN_CONFIG."""
    return usage_error(prog, "--config is required (or set GUARDIAN_CONFIG)")


def failure(prog: str, exc: GuardianError) -> int:
    """Print ``exc`` on stderr; the status: a usage error when the cluster cannot be reached
    with the access given, else a failure. (A ConfigError is guardian's main's to print.)"""
    print(f"{prog}: {exc}", file=sys.stderr)
    return EXIT_USAGE if isinstance(exc, KubeAccessError) else EXIT_FAILURE


def package_version() -> str:
    try:
        return metadata.version("gpu-guardian")
    except metadata.PackageNotFoundError:
        return "unknown"


def add_config_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--config``, by default $GUARDIAN_CONFIG (read when the parser is built)."""
    parser.add_argument(
        "--config",
        default=os.environ.get("GUARDIAN_CONFIG"),
        help=f"{what} (default: $GUARDIAN_CONFIG)",
    )


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


def label_arg(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as an argparse type: the pair, or an ArgumentTypeError."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def add_label_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--label KEY=VALUE``, repeatable: ``args.label`` is the list of pairs."""
    parser.add_argument(
        "--label",
        action="append",
        type=label_arg,
        default=[],
        metavar="KEY=VALUE",
        help=help_text,
    )
