"""Flags that ``simulate`` and ``report`` share: the range, chunking, progress."""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass

from guardian.app.history.progress import (
    BarProgress,
    LineProgress,
    NoProgress,
    Progress,
    progress_for,
)
from guardian.cli._common import add_config_option
from guardian.model.times import parse_rfc3339
from guardian_common.durations import parse_duration

_UNIX = re.compile(r"^[0-9]+(\.[0-9]+)?$")


def add_range_arguments(parser: argparse.ArgumentParser, since: str) -> None:
    add_config_option(parser, "controller config file: Prometheus, rule files, prices")
    parser.add_argument(
        "--since",
        default=since,
        help=f"start: a duration before --until, or a time (default {since})",
    )
    parser.add_argument("--until", help="end: RFC 3339 or unix seconds (default: now)")
    parser.add_argument(
        "--chunk",
        default="1d",
        help="longest stretch one query covers; long ranges are read chunk by chunk (default 1d)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "lines", "none"),
        default="auto",
        help="progress on stderr: a bar on a terminal, plain lines otherwise (default auto)",
    )


def add_metrics_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--metrics", choices=("auto", "guardian", "dcgm"), default="auto")


def parse_time(text: str, flag: str) -> float:
    if _UNIX.match(text):
        return float(text)
    found = parse_rfc3339(text)
    if found is None:
        raise ValueError(f"{flag}: not unix seconds or an RFC 3339 time with a zone: {text!r}")
    return found


@dataclass(frozen=True)
class Range:
    since: float
    until: float
    chunk: float


def parse_range(args: argparse.Namespace, now: float) -> Range:
    """The range from ``--since``/``--until`` (``now`` when no --until). Raises ValueError."""
    until = parse_time(args.until, "--until") if args.until else now
    try:
        since = until - parse_duration(args.since)
    except ValueError:
        if not _UNIX.match(args.since) and parse_rfc3339(args.since) is None:
            raise ValueError(
                "--since: not a duration before --until (such as 7d, 12h or 90m), unix "
                f"seconds or an RFC 3339 time with a zone: {args.since!r}"
            ) from None
        since = parse_time(args.since, "--since")
    if since >= until:
        raise ValueError("--since must be before --until")
    try:
        chunk = parse_duration(args.chunk)
    except ValueError as exc:
        raise ValueError(f"--chunk: {exc}") from None
    return Range(since, until, chunk)


def duration(text: str, flag: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise ValueError(f"{flag}: {exc}") from None


def make_progress(choice: str, label: str) -> Progress:
    """``--progress``: on stderr, a bar on a terminal and plain lines elsewhere (auto)."""
    if choice == "none":
        return NoProgress()
    if choice == "bar":
        return BarProgress(sys.stderr, label)
    if choice == "lines":
        return LineProgress(sys.stderr, label)
    return progress_for(sys.stderr, label)
