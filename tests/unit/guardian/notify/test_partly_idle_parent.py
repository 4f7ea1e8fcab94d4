"""A partly idle workload's parent message says so, naming the idle and the other
parts, instead of a next step that will not come (issue #27: Slack names the parts)."""

from __future__ import annotations

import json

from guardian.adapters.slack.blocks import render_parent
from guardian.engine.notify.findings import apply_remediation
from guardian.model.remediation_events import (
    HoldKind,
    LadderStep,
    RemediationEvent,
    StepOutcome,
)

from .samples import RULES, T0, WORKLOAD, grace

PARTLY = (
    "partly idle, not reclaimed (1 of 2 pods idle; idle: web-1 (GPU idle); not idle: web-2 "
    "(busy or unknown: no idle alert))"
)


def test_the_parent_names_the_parts_and_the_thread_says_it_once() -> None:
    before = grace()
    held = RemediationEvent(
        before.episode, WORKLOAD, LadderStep.GRACE, StepOutcome.REFUSED, T0 + 7300,
        "p", PARTLY, before.labels, hold=HoldKind.EVIDENCE,
    )  # fmt: skip
    changed = apply_remediation(before, held, RULES)
    assert changed is not None
    after, entry = changed
    assert entry.text == PARTLY[:1].upper() + PARTLY[1:] + "."
    payload = json.dumps(render_parent(after, T0 + 7300).blocks)
    assert "*Partly idle:* not reclaimed (1 of 2 pods idle; idle: web-1 (GPU idle)" in payload
    assert "Next step" not in payload
