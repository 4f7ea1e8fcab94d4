"""Shared pieces for subcommand modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from importlib import metadata

Handler = Callable[[argparse.Namespace], int]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


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
