"""The `guardian` command line.

Each command parses its arguments, hands them to the app layer (``dcgm-config`` to the
pure engine) and prints the answer. Clients and databases are built in app, never here.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from guardian.cli import commands
from guardian.cli._common import EXIT_USAGE, config_error, package_version
from guardian_common.errors import ConfigError
from guardian_common.logs import add_logging_arguments, configure_logging


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="guardian",
        description=(
            "GPU Guardian: find idle and under-used GPUs in Kubernetes, alert, and reclaim them."
        ),
    )
    add_logging_arguments(
        parser, package_version(), "INFO; WARNING for commands that print their own outcome"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.register_all(subparsers)
    _name_commands(parser)
    return parser


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Give each (sub)command its own name for its error lines (``guardian status: …``);
    a nested command's default replaces its parent's when argparse parses it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                sub.set_defaults(command_prog=sub.prog)
                _name_commands(sub)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    level = args.log_level or getattr(args, "quiet_log_level", "INFO")
    configure_logging(level, args.log_format)
    try:
        result: int = handler(args)
    except ConfigError as exc:  # any command: a bad file or flag exits 2 with one line each
        return config_error(getattr(args, "command_prog", parser.prog), exc)
    return result
