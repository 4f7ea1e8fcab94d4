"""``guardian alertmanager-config``: routes by guardian_class and severity, and inhibit
rules (pipeline alerts inhibit waste alerts) for Alertmanager or the prometheus-operator;
optionally with real receivers (Slack, PagerDuty, a webhook) whose secrets Alertmanager
reads from files."""

from __future__ import annotations

import argparse
import os
import sys

from guardian.app.alertmanager.config_render import RenderRequest, render_alertmanager_config
from guardian.cli._common import EXIT_OK, SubParsers, add_label_option
from guardian.engine.alertmanager.receivers import Receivers


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
    _add_receiver_options(parser)
    parser.set_defaults(handler=run_alertmanager_config)


def _add_receiver_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "receivers (--format alertmanager; paths as Alertmanager sees them, read at send time)"
    )
    group.add_argument(
        "--slack-channel", metavar="CHANNEL", help="Slack channel for every alert, e.g. #gpu"
    )
    group.add_argument(
        "--slack-api-url-file",
        metavar="PATH",
        help="file holding the Slack incoming-webhook URL (slack_configs[].api_url_file)",
    )
    group.add_argument(
        "--pagerduty-routing-key-file",
        metavar="PATH",
        help="file holding the PagerDuty Events v2 routing key "
        "(pagerduty_configs[].routing_key_file)",
    )
    group.add_argument(
        "--page-on",
        action="append",
        default=[],
        metavar="CLASS[/SEVERITY]",
        help="what PagerDuty pages on, repeatable (default: every critical severity, "
        "in the shipped pack pipeline/critical)",
    )
    group.add_argument(
        "--webhook-url",
        metavar="URL",
        help="webhook for every alert; written into the config, so keep secrets out of it",
    )
    group.add_argument(
        "--webhook-credentials-file",
        metavar="PATH",
        help="file holding the webhook's bearer token (http_config.authorization.credentials_file)",
    )


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
        receivers=Receivers(
            slack_channel=args.slack_channel,
            slack_api_url_file=args.slack_api_url_file,
            pagerduty_routing_key_file=args.pagerduty_routing_key_file,
            page_on=tuple(args.page_on),
            webhook_url=args.webhook_url,
            webhook_credentials_file=args.webhook_credentials_file,
        ),
    )
    sys.stdout.write(render_alertmanager_config(request))
    return EXIT_OK
