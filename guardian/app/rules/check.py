"""``guardian rules check``: load rule files as the engine does and report findings.

With a Prometheus to compare against, it also reports alerts that use a metric
recorded by a rule in the checked files when that metric does not exist there (the
recording rules were not deployed, or not yet evaluated).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.rules.build import read_rule_files
from guardian.engine.promql import metric_names
from guardian.model.rules import RuleFile
from guardian_common.errors import ConfigError, ConfigErrors, GuardianError


@dataclass(frozen=True)
class Finding:
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def load_findings(paths: Sequence[str]) -> tuple[list[RuleFile], list[Finding]]:
    try:
        return read_rule_files(paths), []
    except ConfigErrors as exc:
        return [], [_finding(e) for e in exc.errors]
    except ConfigError as exc:
        return [], [_finding(exc)]


def _finding(error: ConfigError) -> Finding:
    where = error.path or "?"
    if error.line is not None:
        where = f"{where}:{error.line}"
    message = f"{error.field}: {error.reason}" if error.field else error.reason
    return Finding(where, message)


def recorded_metrics_used(files: Sequence[RuleFile]) -> list[tuple[str, int, str, str]]:
    """(file, line, alert, recorded metric) for each alert expr naming a recorded metric."""
    recorded = {r.name for f in files for g in f.groups for r in g.recording_rules}
    out: list[tuple[str, int, str, str]] = []
    for rule_file in files:
        for group in rule_file.groups:
            for rule in group.alerting_rules:
                names = sorted(metric_names(rule.expr) & recorded)
                out.extend((rule_file.path, rule.line, rule.name, n) for n in names)
    return out


def missing_recorded_metrics(files: Sequence[RuleFile], access: PrometheusAccess) -> list[Finding]:
    uses = recorded_metrics_used(files)
    if not uses:
        return []
    querier = PrometheusQuerier(access)
    url = querier.shown_url  # never with its userinfo
    try:
        known = querier.metric_names()
    except GuardianError as exc:
        return [Finding(url, str(exc))]
    finally:
        querier.close()
    return [
        Finding(
            f"{path}:{line}",
            f"alert {alert} uses recorded metric {metric}, which does not exist in {url}",
        )
        for path, line, alert, metric in uses
        if metric not in known
    ]
