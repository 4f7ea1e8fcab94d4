"""The `guardian-exporter` command line. It only parses arguments and hands off to the app layer."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib import metadata

from guardian.app.logs import LOG_FORMATS, configure_logging

EXIT_USAGE = 2


def _version() -> str:
    try:
        return metadata.version("gpu-guardian")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardian-exporter",
        description="GPU Guardian node exporter: per-GPU and per-pod GPU metrics for Prometheus.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument("--log-level", default="INFO", help="log level (default: %(default)s)")
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log format (default: %(default)s)",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in (
        ("serve", "collect GPU metrics and serve them on /metrics"),
        ("attribute", "print the PID to pod attribution of a /proc tree as JSON (debugging)"),
    ):
        cmd = sub.add_parser(name, help=help_text, description=help_text)
        cmd.set_defaults(handler=cmd.prog)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    configure_logging(args.log_level, args.log_format)
    print(f"{args.handler}: not implemented yet (tracked in issue #3)", file=sys.stderr)
    return EXIT_USAGE
