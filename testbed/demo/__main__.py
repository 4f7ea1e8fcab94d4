"""``python -m testbed.demo`` (``make demo``): the whole loop on a simulated fleet."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from testbed.demo import DemoRequest, run_demo

EXIT_USAGE = 2
PROG = "python -m testbed.demo"


def build_parser() -> argparse.ArgumentParser:
    text = "run the whole loop on a simulated fleet (no cluster, GPU or Slack needed)"
    parser = argparse.ArgumentParser(
        prog=PROG, description=text + ". Exits 1 if any expected outcome did not happen."
    )
    parser.add_argument(
        "--timeout", type=float, default=180.0, help="seconds for the whole demo (default: 180)"
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        help="keep configs, rules, state and logs here (default: a temp dir)",
    )
    parser.add_argument(
        "--keep-workdir", action="store_true", help="do not remove the temporary directory"
    )
    parser.add_argument(
        "--rules-dir", type=Path, help="rule pack to compress (default: the shipped rules/guardian)"
    )
    parser.add_argument(
        "--time-factor",
        type=int,
        default=60,
        help="divide every rule duration by this (default: 60, so 30m windows take 30s)",
    )
    parser.add_argument(
        "--slack-channel",
        help="send to this real Slack channel (ID) instead of the fake workspace",
    )
    parser.add_argument(
        "--slack-token",
        help="bot token for --slack-channel (default: $SLACK_BOT_TOKEN)",
    )
    parser.add_argument("--pid-file", type=Path, help="write the PIDs of started processes here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    token = args.slack_token or (os.environ.get("SLACK_BOT_TOKEN") if args.slack_channel else None)
    if bool(token) != bool(args.slack_channel):
        print(
            f"{PROG}: real Slack needs both --slack-channel and a token "
            "(--slack-token or $SLACK_BOT_TOKEN)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    if args.time_factor < 1:
        print(f"{PROG}: --time-factor must be >= 1", file=sys.stderr)
        return EXIT_USAGE
    request = DemoRequest(
        timeout=args.timeout,
        workdir=args.workdir,
        keep_workdir=args.keep_workdir,
        rules_dir=args.rules_dir,
        factor=args.time_factor,
        slack_token=token or None,
        slack_channel=args.slack_channel,
        pid_file=args.pid_file,
    )
    return run_demo(request, sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
