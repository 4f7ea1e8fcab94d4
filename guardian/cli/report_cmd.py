"""``guardian report``: allocated, used and idle GPU-hours and their cost, per day."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.report.formats import render_csv, render_json, render_table
from guardian.app.report.gpu_hours import ReportOptions, ReportResult, UsageReport
from guardian.app.report.html import render_html
from guardian.app.rules.build import prometheus_access
from guardian.app.settings.config_file import load_settings
from guardian.cli._common import EXIT_FAILURE, EXIT_OK, SubParsers, config_required, usage_error
from guardian.cli._history import (
    add_metrics_option,
    add_range_arguments,
    duration,
    make_progress,
    parse_range,
)
from guardian.engine.report.chargeback import DIMENSIONS
from guardian_common.errors import ConfigError, GuardianError

_PROG = "guardian report"


def register(subparsers: SubParsers) -> None:
    text = "allocated, used and idle GPU-hours and cost per group, namespace, workload, model"
    p = subparsers.add_parser("report", help=text, description=text)
    add_range_arguments(p, since="30d")
    p.add_argument(
        "--by", choices=DIMENSIONS, default="gpu_group", help="summarize by (default gpu_group)"
    )
    p.add_argument(
        "--format", choices=("table", "csv", "json", "html"), default="table", help="default table"
    )
    p.add_argument("--output", "-o", help="write to this file (required for html; default stdout)")
    p.add_argument(
        "--resolution",
        default="5m",
        help="time between the points summed; divides a day (default 5m)",
    )
    p.add_argument(
        "--idle-floor",
        type=float,
        default=0.05,
        help="utilization (0-1) under which an allocated GPU is idle (default 0.05)",
    )
    add_metrics_option(p)
    p.set_defaults(handler=run_report)


Render = Callable[[ReportResult], str]


def renderer(fmt: str, by: str) -> Render:
    """How to print the report in ``fmt``. The HTML page draws its charts itself (inline
    SVG): it needs no plotting library, and works in the image too."""
    if fmt == "table":
        return lambda result: render_table(result, by)
    if fmt == "csv":
        return render_csv
    if fmt == "json":
        return lambda result: json.dumps(render_json(result, by), indent=2) + "\n"
    return lambda result: render_html(result, by)


def run_report(args: argparse.Namespace) -> int:
    if not args.config:
        return config_required(_PROG)
    if args.format == "html" and not args.output:
        return usage_error(_PROG, "--format html needs --output FILE")
    render = renderer(args.format, args.by)
    try:
        span = parse_range(args, time.time())
        options = ReportOptions(
            since=span.since,
            until=span.until,
            resolution=duration(args.resolution, "--resolution"),
            floor=args.idle_floor,
            chunk_seconds=span.chunk,
            metrics=args.metrics,
        )
        settings = load_settings(args.config, os.environ)
    except ValueError as exc:
        return usage_error(_PROG, exc)
    except ConfigError as exc:
        return usage_error(_PROG, f"invalid configuration:\n{exc}")
    querier = PrometheusQuerier(prometheus_access(settings))
    progress = make_progress(args.progress, "report")
    try:
        result = UsageReport(settings, options, querier, progress=progress).run()
    except GuardianError as exc:
        print(f"guardian report: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        querier.close()
    text = render(result)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"guardian report: wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
