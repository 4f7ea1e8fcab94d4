"""``alerts.source: prometheus``: at each group's evaluation slot, read the ruler's
``/api/v1/rules`` (gather) and turn it into the group's state and evaluation (pure,
``guardian/engine/rules/remote_state.py``), in place of querying the expressions. The
engine then stores it, hands it to Slack and to remediation exactly as its own.
"""

from __future__ import annotations

import logging

from guardian.adapters.prometheus_rules import PrometheusRulesReader
from guardian.engine.rules.group_eval import CompiledGroup, GroupState
from guardian.engine.rules.remote_state import observe_group
from guardian.model.alerts import Alert, GroupEvaluation
from guardian.model.labels import LabelSet
from guardian.model.remote_rules import RemoteGroup

logger = logging.getLogger(__name__)


class RulerSource:
    """A :data:`~guardian.app.rules.runtime.GroupEvaluator` reading one ruler."""

    def __init__(self, reader: PrometheusRulesReader) -> None:
        self.reader = reader

    def __call__(
        self, compiled: CompiledGroup, state: GroupState, ts: float
    ) -> tuple[dict[str, dict[LabelSet, Alert]], GroupEvaluation]:
        answer: tuple[RemoteGroup, ...] | BaseException
        try:
            answer = self.reader.groups()
        except Exception as exc:  # per group: its rules fail, the loop goes on
            logger.warning("group %s: cannot read the ruler's rules: %s", compiled.name, exc)
            answer = exc
        return observe_group(compiled, state, answer, ts)

    def close(self) -> None:
        self.reader.close()
