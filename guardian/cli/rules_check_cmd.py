"""``guardian rules check FILES...``: validate rule files as the engine loads them."""

from __future__ import annotations

import argparse
import os
import sys

from guardian.adapters.prometheus import PrometheusAccess
from guardian.app.rules.build import prometheus_access
from guardian.app.rules.check import load_findings, missing_recorded_metrics
from guardian.app.settings.config_file import load_settings
from guardian.cli._common import EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, SubParsers, config_error
from guardian.model.http_client import HttpClientConfig
from guardian_common.errors import ConfigError
from guardian_common.words import plural


def register(subparsers: SubParsers) -> None:
    text = "validate rule files as the engine loads them"
    parser = subparsers.add_parser("check", help=text, description=text)
    parser.add_argument("files", nargs="+", metavar="FILE", help="rule files")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--prometheus-url",
        help="also check that metrics recorded by these files exist in this Prometheus",
    )
    target.add_argument(
        "--config", help="as --prometheus-url, with the Prometheus (and auth) of this config"
    )
    parser.set_defaults(handler=run_check)


def run_check(args: argparse.Namespace) -> int:
    files, findings = load_findings(args.files)
    access: PrometheusAccess | None = None
    if args.prometheus_url:
        access = PrometheusAccess(HttpClientConfig(args.prometheus_url))
    elif args.config:
        try:
            access = prometheus_access(load_settings(args.config, os.environ))
        except ConfigError as exc:
            return config_error("guardian rules check", exc)
    if files and access is not None:
        findings.extend(missing_recorded_metrics(files, access))
    for finding in findings:
        print(finding)
    if findings:
        print(f"{plural(len(findings), 'problem')} found", file=sys.stderr)
        return EXIT_FAILURE if files else EXIT_CONFIG  # no files: they did not load
    groups = sum(len(f.groups) for f in files)
    rules = sum(len(g.rules) for f in files for g in f.groups)
    print(f"ok: {plural(len(files), 'file')}, {plural(groups, 'group')}, {plural(rules, 'rule')}")
    return EXIT_OK
