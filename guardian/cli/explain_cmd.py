"""``guardian explain NAMESPACE/KIND/NAME``: why a workload was or was not acted on.

Asks a running controller (``--url``): it reads the workload again and plans it alone
as its cycle does, and answers with every gate the planner asked and its answer, the
decision, the episode and the ledger's history. ``--at`` answers from the ledger: what
was decided last before that time (with ``--state``/``--config``, from a state database
without a controller)."""

from __future__ import annotations

import argparse
import json
import sys

from guardian.adapters.ledger import Ledger
from guardian.adapters.status_api import fetch_explain
from guardian.app.remediation.explain import history_answer, render
from guardian.app.settings.config_file import load_settings
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, add_state_options
from guardian.model.times import parse_rfc3339
from guardian_common.errors import ConfigError, GuardianError


def register(subparsers: SubParsers) -> None:
    text = "why a workload was (or was not) reclaimed: every gate the planner asked"
    parser = subparsers.add_parser("explain", help=text, description=text)
    parser.add_argument("workload", help="NAMESPACE/KIND/NAME, e.g. ml/Deployment/train-llm")
    parser.add_argument("--url", help="a running controller, e.g. http://gpu-guardian:9469")
    parser.add_argument(
        "--at", help="RFC 3339 time: what was decided last before it (from the ledger)"
    )
    add_state_options(parser)
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=run, quiet_log_level="WARNING")


def run(args: argparse.Namespace) -> int:
    at = parse_rfc3339(args.at) if args.at else None
    if args.at and at is None:
        raise ConfigError(f"not an RFC 3339 time: {args.at!r}", field="--at")
    try:
        if args.url:
            answer = fetch_explain(args.url, args.workload, args.at)
        elif at is not None and (args.state or args.config):
            state = args.state or load_settings(args.config).state_path
            ledger = Ledger.open_existing(state)
            try:
                answer = history_answer(ledger, args.workload, at)
            finally:
                ledger.close()
        else:
            raise ConfigError(
                "give --url (a running controller), or --at with --state or --config",
                field="--url",
            )
    except ConfigError:
        raise  # guardian's main prints it and exits 2
    except GuardianError as exc:
        print(f"guardian explain: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(json.dumps(answer, indent=2) if args.json else render(answer))
    return EXIT_OK
