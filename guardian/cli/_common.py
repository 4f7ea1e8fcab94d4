"""Shared pieces for subcommand modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib import metadata

from guardian_common.errors import ConfigError

Handler = Callable[[argparse.Namespace], int]

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


def placeholder(name: str, issue: int) -> Handler:
    """A handler for a subcommand whose issue has not landed: says so and exits 2."""

    def handler(_args: argparse.Namespace) -> int:
        print(f"{name}: not implemented yet (tracked in issue #{issue})", file=sys.stderr)
        return EXIT_USAGE

    return handler
