"""Subcommand registry: every command module registers its parser here."""

from __future__ import annotations

from guardian.cli import (
    alertmanager_config_cmd,
    dcgm_cmd,
    engine_cmds,
    explain_cmd,
    policies_cmd,
    report_cmd,
    restore_cmd,
    rules_check_cmd,
    rules_render_cmd,
    rules_test_cmd,
    simulate_cmd,
    status_cmd,
)
from guardian.cli._common import SubParsers


def register_all(subparsers: SubParsers) -> None:
    engine_cmds.register(subparsers)
    _register_rules(subparsers)
    _register_policies(subparsers)
    restore_cmd.register(subparsers)
    status_cmd.register(subparsers)
    explain_cmd.register(subparsers)
    simulate_cmd.register(subparsers)
    report_cmd.register(subparsers)
    dcgm_cmd.register(subparsers)
    alertmanager_config_cmd.register(subparsers)


def _register_rules(subparsers: SubParsers) -> None:
    rules = subparsers.add_parser("rules", help="check, render and unit-test rule files")
    rules_sub = rules.add_subparsers(dest="rules_command", metavar="RULES_COMMAND", required=True)
    rules_check_cmd.register(rules_sub)
    rules_render_cmd.register(rules_sub)
    rules_test_cmd.register(rules_sub)


def _register_policies(subparsers: SubParsers) -> None:
    policies = subparsers.add_parser("policies", help="validate reclaim policies")
    policies_sub = policies.add_subparsers(
        dest="policies_command", metavar="POLICIES_COMMAND", required=True
    )
    policies_cmd.register(policies_sub)
