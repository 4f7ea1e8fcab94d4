"""Untrusted text on its way to Slack: labels, alert annotations, the workload's own
mention annotation, runbook URLs, error texts and the users a click names, each holding
Slack's control sequences (``<!everyone>``, ``<https://evil|Restore now>``, ``&``,
``*bold*``...), through every message kind: parents in every phase, reminders, webhook
changes, thread replies (ladder steps, click echoes, group lines), grouped details and
summaries, pipeline alerts, and the ephemeral answers to clicks.

In every string Slack parses (the ``text`` fallback and every mrkdwn text object), the
only ``<…>`` sequences are our own: dates, the validated mentions, and links to the
configured runbook, percent-encoded so that they cannot end early. Every ``&`` is an
entity, and mrkdwn objects are ``verbatim`` (Slack makes no links of its own).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, cast

import pytest

from guardian.adapters.slack.blocks import (
    SlackPayload,
    render_detail,
    render_group,
    render_parent,
    render_reply,
)
from guardian.app.notify.click_intake import ClickService
from guardian.engine.notify.buttons import ButtonRules
from guardian.engine.notify.click_plan import (
    Access,
    Click,
    ClickFacts,
    ClickPlan,
    plan_click,
)
from guardian.engine.notify.findings import AlertFacts, FindingRules, new_finding
from guardian.engine.notify.lifecycle import summarise
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, HistoryEntry, OwnerContext, Phase
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef

EVIL = (
    "<!everyone> <!channel|Runbook> <https://evil.example/x|Restore now> <@U0EVIL> "
    "a & b &lt;!here&gt; *bold* _it_ ~strike~ `tick` ``` >quote"
)
T0 = 1_764_000_000.0
RUNBOOK = "https://runbooks.example/gpu|<!channel|Runbook> x>y"  # from our rule pack
BUTTONS = ButtonRules(enabled=True, reclaim_now=True)
# The owner's annotation: two valid IDs and @here among things that must not ping or link.
MENTION = "U0ALICE, <!everyone> everyone <https://evil.example|Restore now> @here <@U0BOB|x>"
MENTIONS_SHOWN = {"<@U0ALICE>", "<!here>", "<@U0BOB>"}
ACTOR = "U0CAROL"  # a click's user, from Slack's signed payload


def _finding(labels: dict[str, str], runbook: str = RUNBOOK) -> Finding:
    annotations = {
        "summary": EVIL,
        "description": EVIL,
        "runbook_url": runbook,
        "advice": EVIL,
    }
    context = OwnerContext(
        workload=WorkloadRef("apps/v1", "Deployment", "ml", "train" + EVIL),
        workload_annotations=LabelSet({"gpu-guardian.io/slack-mention": MENTION}),
    )
    facts = AlertFacts(LabelSet(labels), LabelSet(annotations), 0.01, T0)
    return new_finding(facts, T0 + 3600, FindingRules(), context)


WASTE = {
    "alertname": "GpuIdle",
    "severity": "warning" + EVIL,
    "cluster": EVIL,
    "namespace": "ml",
    "pod": "train-0" + EVIL,
    "node": EVIL,
    "gpu_group": EVIL,
    "gpu_model": EVIL,
}
PIPELINE = {
    "alertname": "GpuExporterDown",
    "guardian_class": "pipeline",
    "severity": "warning",
    "node": EVIL,
    "instance": EVIL,
    "job": EVIL,
    "reason": EVIL,
    "group": EVIL,
}


def _phases(f: Finding) -> Iterator[tuple[str, Finding]]:
    yield "firing", f
    grace = f.with_changes(
        phase=Phase.GRACE,
        policy=EVIL,
        next_step=LadderStep.RECLAIM,
        next_step_due=T0 + 7200,
        last_outcome=StepOutcome.APPLIED,
        evaluation_note=EVIL,
    )
    yield "grace", grace
    yield "kept", grace.with_changes(kept_until=T0 + 9000, kept_by=ACTOR)
    yield "kept-by-name", grace.with_changes(kept_until=T0 + 9000, kept_by=EVIL)
    yield "exempted", grace.with_changes(exempted_by=EVIL)
    reclaimed = grace.with_changes(phase=Phase.RECLAIMED, restore_command="guardian " + EVIL)
    yield "reclaimed", reclaimed
    yield "restored-resolved", reclaimed.with_changes(phase=Phase.RESTORED, resolved_at=T0 + 9e3)
    yield "resolved", f.with_changes(phase=Phase.RESOLVED, resolved_at=T0 + 9000)


def _entries() -> Iterator[tuple[str, HistoryEntry]]:
    yield "firing", HistoryEntry(T0, Phase.FIRING, "Firing.", (MENTION,))
    yield "ladder", HistoryEntry(T0, Phase.GRACE, EVIL, (), LadderStep.RECLAIM, T0 + 60)
    yield "reclaim", HistoryEntry(T0, Phase.RECLAIMED, "Reclaimed " + EVIL, tuple(MENTION.split()))
    yield "click", HistoryEntry(T0, Phase.GRACE, "kept it until " + EVIL, actor=ACTOR)
    yield "click-by-name", HistoryEntry(T0, Phase.GRACE, EVIL, actor=EVIL)


def messages() -> Iterator[tuple[str, SlackPayload]]:
    now = T0 + 3600
    for kind, labels in (("waste", WASTE), ("pipeline", PIPELINE)):
        base = _finding(labels)
        for phase, f in _phases(base):
            yield f"{kind}-parent-{phase}", render_parent(f, now, buttons=BUTTONS)
            yield f"{kind}-reminder-{phase}", render_parent(f, now, reminder=True)
            change = HistoryEntry(now, f.phase, EVIL, (MENTION,))
            yield f"{kind}-webhook-{phase}", render_parent(f, now, change=change)
            yield f"{kind}-detail-{phase}", render_detail(f, now, BUTTONS)
            for name, entry in _entries():
                yield f"{kind}-reply-{phase}-{name}", render_reply(entry, f)
        group = [base.with_changes(episode=f"e{i}") for i in range(6)]
        yield f"{kind}-group", render_group(summarise("g", EVIL, EVIL, group, now), now)
        yield f"{kind}-group-reply", render_reply(HistoryEntry(now, Phase.FIRING, EVIL), None, EVIL)
    unsafe = _finding(WASTE, runbook="javascript:alert(1)//<!everyone>")
    yield "runbook-not-http", render_parent(unsafe, T0 + 3600)


class _People:
    def __init__(self) -> None:
        self.said: list[str] = []

    def post_ephemeral(self, channel: str, user: str, text: str) -> None:
        self.said.append(text)

    def usergroup_members(self, group: str) -> tuple[str, ...]:
        return ()


def answers() -> Iterator[tuple[str, str]]:
    """What a user is told after a click: every refusal, through the click service."""
    people = _People()
    service = ClickService(cast("Any", None), cast("Any", None), people, Access, lambda: T0)
    f = _finding(WASTE).with_changes(gpu_group=EVIL, namespace="ml" + EVIL)
    click = Click("keep_4h", f.episode, "U0MALLORY", "C0ALERTS", "1.000001", T0)
    plans = {
        "not-authorized": plan_click(click, ClickFacts(f), Access(), BUTTONS),
        "stale": plan_click(
            click, ClickFacts(f.with_changes(phase=Phase.RESTORED)), Access(), BUTTONS
        ),
        "kill-switch": plan_click(click, ClickFacts(f, kill_switch=True), Access(), BUTTONS),
        "foreign": plan_click(click, ClickFacts(None, foreign=True), Access(), BUTTONS),
        "error": ClickPlan(None, f"Nothing changed: {EVIL}"),
    }
    for name, plan in plans.items():
        service._answer(click, plan)
        yield name, people.said[-1]


# ---------------------------------------------------------------- the checks
_OURS = re.compile(
    r"<!date\^\d+\^\{date_short_pretty\} \{time\}\|[^<>|]+>"
    r"|<@[UW][A-Z0-9]+>|<!subteam\^S[A-Z0-9]+>|<!here>|<!channel>"
    r"|<https?://[^<>|\s]+\|Runbook>"
)
_MENTION = re.compile(r"<@[UW][A-Z0-9]+>|<!subteam\^S[A-Z0-9]+>|<!here>|<!channel>")
_LINK = re.compile(r"<(https?://[^<>|\s]+)\|Runbook>")
_ENTITY = re.compile(r"&(?!amp;|lt;|gt;)")


def parsed(payload: SlackPayload) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """Every string Slack parses: the fallback, and each mrkdwn text object."""
    yield payload.text, None

    def walk(node: Any) -> Iterator[tuple[str, dict[str, Any] | None]]:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                yield node["text"], node
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for item in node:
                yield from walk(item)

    yield from walk(payload.blocks)


def check(text: str) -> None:
    rest = _OURS.sub("", text)
    assert "<" not in rest, f"a Slack sequence of someone else's: {text!r}"
    assert ">" not in rest, f"a Slack sequence of someone else's: {text!r}"
    assert not _ENTITY.search(text), f"an & that is not an entity: {text!r}"
    allowed = MENTIONS_SHOWN | {f"<@{ACTOR}>"}
    assert set(_MENTION.findall(text)) <= allowed, text
    for url in _LINK.findall(text):
        assert url.startswith("https://runbooks.example/gpu%7C%3C!channel%7CRunbook%3E"), url


@pytest.mark.parametrize(("name", "payload"), list(messages()), ids=lambda v: str(v)[:40])
def test_no_untrusted_text_becomes_markup(name: str, payload: SlackPayload) -> None:
    texts = list(parsed(payload))
    for text, obj in texts:
        check(text)
        if obj is not None:
            assert obj.get("verbatim") is True, f"{name}: Slack would add links of its own"
    everything = "\n".join(t for t, _ in texts)
    assert "&lt;!everyone&gt;" in everything  # the text is still shown, as text
    assert "<!everyone>" not in everything


def test_the_owners_mentions_are_validated_ids_only() -> None:
    f = _finding(WASTE)
    entry = HistoryEntry(T0, Phase.RECLAIMED, "Reclaimed.", f.mentions)
    for payload in (render_parent(f, T0 + 3600), render_reply(entry, f)):
        assert set(_MENTION.findall(payload.text)) == MENTIONS_SHOWN  # the fallback
        shown = {m for text, _ in parsed(payload) for m in _MENTION.findall(text)}
        assert shown == MENTIONS_SHOWN


@pytest.mark.parametrize(("name", "answer"), list(answers()))
def test_click_answers_escape_what_they_quote(name: str, answer: str) -> None:
    check(answer)
    if name in ("not-authorized", "error"):
        assert "&lt;!everyone&gt;" in answer
