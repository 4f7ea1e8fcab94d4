"""Process-wide logging setup, called once by the CLI."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from typing import Any, TextIO

from guardian_common.redact import RedactFilter

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
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:  # RedactFilter leaves the scrubbed traceback here
            entry["exc"] = record.exc_text
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
    """Install one handler on the root logger; safe to call again (it replaces the handler).

    The handler scrubs URL userinfo and secret query values from every record, whichever
    logger (ours or a library's) it comes from."""
    if fmt not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}, not {fmt!r}")
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
