"""``guardian eval`` and ``guardian run``."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from guardian.adapters.kube.credentials import KubeAccessError
from guardian.app.http_api import format_api_value
from guardian.app.rules.eval_once import EvalReport, evaluate_once, parse_eval_time
from guardian.app.runner import EngineRunner
from guardian.cli._common import (
    EXIT_FAILURE,
    EXIT_OK,
    SubParsers,
    add_config_option,
    config_error,
    config_required,
    usage_error,
)
from guardian.model.times import rfc3339
from guardian_common.errors import ConfigError

logger = logging.getLogger(__name__)


def register(subparsers: SubParsers) -> None:
    text = "evaluate every rule group once and print the alerts (never acts)"
    ev = subparsers.add_parser("eval", help=text, description=text)
    add_config_option(ev, "controller config file")
    ev.add_argument("--at", help="evaluation time: RFC 3339 or unix seconds (default: now)")
    ev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ev.set_defaults(handler=run_eval)

    text = "run the scheduled rule engine and its HTTP endpoint"
    run = subparsers.add_parser("run", help=text, description=text)
    add_config_option(run, "controller config file")
    run.set_defaults(handler=run_engine)


def _print_table(report: EvalReport) -> None:
    print(f"evaluated at {rfc3339(report.at, 'ms')}")
    rows = [("GROUP", "ALERT", "STATE", "ACTIVE SINCE", "VALUE", "LABELS")]
    for a in sorted(report.alerts, key=lambda a: (a.group, a.rule, a.alert.labels.items_sorted)):
        labels = ",".join(f"{k}={v}" for k, v in a.alert.labels.items() if k != "alertname")
        rows.append(
            (
                a.group,
                a.rule,
                a.alert.state.value,
                rfc3339(a.alert.active_at, "ms"),
                format_api_value(a.alert.value),
                labels,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[-1])
    if len(rows) == 1:
        print("(no pending or firing alerts)")


def run_eval(args: argparse.Namespace) -> int:
    if not args.config:
        return config_required("guardian eval")
    try:
        at = parse_eval_time(args.at) if args.at else None
    except ValueError as exc:
        return usage_error("guardian eval", exc)
    try:
        report = evaluate_once(args.config, os.environ, at)
    except ConfigError as exc:
        return config_error("guardian eval", exc)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        _print_table(report)
    for evaluation in report.evaluations:
        for outcome in evaluation.outcomes:
            if not outcome.health.actionable:
                print(
                    f"{evaluation.group}/{outcome.rule}: {outcome.health.value} "
                    f"({outcome.reason}): {outcome.error}",
                    file=sys.stderr,
                )
    return EXIT_OK if report.healthy else EXIT_FAILURE


def run_engine(args: argparse.Namespace) -> int:
    if not args.config:
        return config_required("guardian run")
    try:
        runner = EngineRunner(args.config, os.environ)
    except KubeAccessError as exc:
        return usage_error("guardian run", exc)
    except ConfigError as exc:
        return config_error("guardian run", exc)
    except OSError as exc:  # e.g. the listen address is taken
        print(f"guardian run: cannot start: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    runner.install_signal_handlers()
    return runner.run()
