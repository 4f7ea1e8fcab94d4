"""``guardian alertmanager-config``: routes by guardian_class and severity, and inhibit
rules (pipeline alerts inhibit waste alerts) for Alertmanager or the prometheus-operator."""

from __future__ import annotations

import argparse
import os
import sys

from guardian.app.alertmanager.config_render import RenderRequest, render_alertmanager_config
from guardian.cli._common import EXIT_OK, SubParsers, add_label_option


def register(subparsers: SubParsers) -> None:
    text = "print an Alertmanager configuration (routes, receivers, inhibit rules) for the alerts"
    parser = subparsers.add_parser("alertmanager-config", help=text, description=text)
    parser.add_argument("files", nargs="*", metavar="FILE", help="rule files")
    parser.add_argument("--config", help="take the rule files from this controller config")
    parser.add_argument(
        "--format",
        choices=("alertmanager", "alertmanagerconfig"),
        default="alertmanager",
        help="alertmanager.yml content (default) or a monitoring.coreos.com/v1alpha1 "
        "AlertmanagerConfig for the prometheus-operator",
    )
    parser.add_argument("--name", default="gpu-guardian", help="AlertmanagerConfig metadata.name")
    parser.add_argument("--namespace", help="AlertmanagerConfig metadata.namespace")
    add_label_option(
        parser,
        "AlertmanagerConfig metadata label, e.g. for alertmanagerConfigSelector",
    )
    parser.add_argument(
        "--receiver-prefix",
        default="gpu-guardian",
        help="receiver names: PREFIX, PREFIX-CLASS, PREFIX-CLASS-SEVERITY",
    )
    parser.set_defaults(handler=run_alertmanager_config)


def run_alertmanager_config(args: argparse.Namespace) -> int:
    request = RenderRequest(
        files=tuple(args.files),
        config=args.config,
        env=dict(os.environ),
        format=args.format,
        name=args.name,
        namespace=args.namespace,
        labels=dict(args.label),
        receiver_prefix=args.receiver_prefix,
    )
    sys.stdout.write(render_alertmanager_config(request))
    return EXIT_OK
