"""Process-wide logging setup, called once by the CLI."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, TextIO

LOG_FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    """One JSON object per line, for log shippers."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def add_logging_arguments(
    parser: argparse.ArgumentParser, version: str, level_help: str = "INFO"
) -> None:
    """``--version``, ``--log-level`` and ``--log-format``, the same for both programs.
    ``--log-level`` defaults to None: the program picks (``level_help`` says what)."""
    parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
    parser.add_argument("--log-level", help=f"log level (default: {level_help})")
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="text",
        help="log format (default: %(default)s)",
    )


def configure_logging(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Install one handler on the root logger; safe to call again (it replaces the handler)."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}, not {fmt!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
