"""``guardian rules render``: rule files as PrometheusRule manifests or one rule file."""

from __future__ import annotations

import argparse
import sys

from guardian.app.rules.check import load_findings
from guardian.cli._common import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_OK,
    SubParsers,
    add_label_option,
)
from guardian.engine.rules.render import (
    DEFAULT_NAME,
    PLACEHOLDERS,
    RenderError,
    RenderOptions,
    render,
)


def register(subparsers: SubParsers) -> None:
    text = "render rule files as PrometheusRule manifests or as one rule file"
    placeholders = ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
    parser = subparsers.add_parser("render", help=text, description=text)
    parser.add_argument("files", nargs="+", metavar="FILE", help="rule files")
    parser.add_argument(
        "--format",
        choices=("prometheusrule", "rulefile"),
        default="prometheusrule",
        help="monitoring.coreos.com/v1 PrometheusRule objects (default) or a plain rule file",
    )
    parser.add_argument(
        "--name",
        default=DEFAULT_NAME,
        help=f"metadata.name (default {DEFAULT_NAME}; -1, -2, ... when split)",
    )
    parser.add_argument("--namespace", help="metadata.namespace (default: none)")
    add_label_option(
        parser,
        "metadata label, e.g. release=kube-prometheus-stack for the operator's "
        "ruleSelector (repeatable)",
    )
    parser.add_argument(
        "--runbook-url-pattern",
        metavar="PATTERN",
        help=f"set runbook_url on every alert from PATTERN; placeholders: {placeholders}",
    )
    parser.set_defaults(handler=run_render)


def run_render(args: argparse.Namespace) -> int:
    files, findings = load_findings(args.files)
    if findings:
        for finding in findings:
            print(finding, file=sys.stderr)
        print(f"{len(findings)} problem(s) found; nothing rendered", file=sys.stderr)
        return EXIT_CONFIG
    options = RenderOptions(
        format=args.format,
        name=args.name,
        namespace=args.namespace,
        labels=dict(args.label),
        runbook_url_pattern=args.runbook_url_pattern,
        sources=tuple(args.files),
    )
    try:
        text = render(files, options)
    except RenderError as exc:
        print(f"guardian rules render: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    sys.stdout.write(text)
    return EXIT_OK
