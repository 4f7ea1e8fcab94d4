"""``guardian eval``: one evaluation of every group at one time; nothing is stored,
written or notified."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from guardian.app.http_api import alert_json
from guardian.app.rules.build import build_engine
from guardian.app.rules.runtime import ActiveAlert
from guardian.app.settings.config_file import load_settings
from guardian.model.alerts import GroupEvaluation
from guardian.model.times import rfc3339

_UNIX = re.compile(r"^-?[0-9]+(\.[0-9]+)?$")


def parse_eval_time(text: str) -> float:
    """Unix seconds, or an RFC 3339 time with a zone (``2026-01-02T03:04:05Z``)."""
    if _UNIX.match(text):
        return float(text)
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"--at: not unix seconds or RFC 3339: {text!r}") from exc
    if moment.tzinfo is None:
        raise ValueError(f"--at: RFC 3339 time needs a zone (Z or +hh:mm): {text!r}")
    return moment.timestamp()


@dataclass(frozen=True)
class EvalReport:
    at: float
    evaluations: list[GroupEvaluation]
    alerts: list[ActiveAlert]

    @property
    def healthy(self) -> bool:
        return all(e.healthy for e in self.evaluations)

    def to_json(self) -> dict[str, Any]:
        return {
            "at": rfc3339(self.at, "ms"),
            "healthy": self.healthy,
            "groups": [self._group_json(e) for e in self.evaluations],
        }

    def _group_json(self, evaluation: GroupEvaluation) -> dict[str, Any]:
        return {
            "group": evaluation.group,
            "file": evaluation.file,
            "ts": evaluation.ts,
            "rules": [
                {
                    "rule": o.rule,
                    "health": o.health.value,
                    "reason": o.reason,
                    "error": o.error,
                    "warnings": list(o.warnings),
                    "samples": o.samples,
                }
                for o in evaluation.outcomes
            ],
            "alerts": [
                {"rule": a.rule, **alert_json(a)}
                for a in self.alerts
                if a.group == evaluation.group
            ],
        }


def evaluate_once(
    config: str,
    env: Mapping[str, str],
    at: float | None,
    *,
    clock: Callable[[], float] = time.time,
) -> EvalReport:
    """Evaluate every group once at ``at`` (default: ``clock()``), at millisecond precision."""
    settings = load_settings(config, env)
    ts = round((at if at is not None else clock()) * 1000) / 1000.0
    parts = build_engine(settings, persistent=False)
    try:
        engine = parts.engine
        evaluations = [engine.evaluate(g.key, ts, persist=False) for g in engine.groups]
        return EvalReport(ts, evaluations, engine.active_alerts())
    finally:
        parts.querier.close()
        parts.engine.close()
