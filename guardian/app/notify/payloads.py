"""Turn a notifier plan into the rows its one write stores: payloads rendered in advance.

Rendering is pure work on the plan's operations, done before the transaction so that the
transaction runs SQL only. Each payload carries its marker block (from the idempotency
key), which lets delivery find a message that may have reached Slack before a crash.
"""

from __future__ import annotations

from guardian.adapters.slack.blocks import (
    SlackPayload,
    render_detail,
    render_group,
    render_parent,
    render_reply,
    with_marker,
)
from guardian.adapters.slack.outbox import IntakeRows, OutboxRow, picture_queue
from guardian.engine.notify.buttons import NO_BUTTONS, ButtonRules
from guardian.engine.notify.lifecycle import Op, OpKind
from guardian.engine.notify.state import Enqueue, NotifyPlan

REMEDIATION_CURSOR = "remediation"  # the remediation ledger's position in slack_cursors


def intake_rows(
    plan: NotifyPlan,
    now: float,
    *,
    webhook: bool,
    prune_before: float | None = None,
    buttons: ButtonRules = NO_BUTTONS,
) -> IntakeRows:
    return IntakeRows(
        now=now,
        threads=plan.threads,
        episodes=plan.episodes,
        aliases=plan.aliases,
        seen=plan.seen,
        outbox=[_row(e, now, webhook=webhook, buttons=buttons) for e in plan.outbox],
        cursor=None if plan.cursor is None else (REMEDIATION_CURSOR, str(plan.cursor)),
        prune_before=prune_before,
    )


def _row(e: Enqueue, now: float, *, webhook: bool, buttons: ButtonRules) -> OutboxRow:
    op = e.op
    if op.picture is not None:  # drawn at delivery, in its own queue: never ahead of news
        queue = picture_queue(e.channel)
        return OutboxRow(op.idem, queue, op.thread, op.kind, op.picture.to_dict())
    payload = with_marker(render_op(op, now, webhook=webhook, buttons=buttons), op.idem)
    return OutboxRow(op.idem, e.channel, op.thread, op.kind, payload.to_json())


def render_op(
    op: Op, now: float, *, webhook: bool, buttons: ButtonRules = NO_BUTTONS
) -> SlackPayload:
    if op.summary is not None:
        return render_group(op.summary, now)
    if op.kind is OpKind.REPLY:
        if op.entry is not None:
            return render_reply(op.entry, op.finding, op.finding.alertname if op.finding else "")
        assert op.finding is not None  # noqa: S101 - plan_change always sets one
        return render_detail(op.finding, now, buttons)
    assert op.finding is not None  # noqa: S101 - parents carry a finding or a summary
    change = op.entry if webhook else None  # a webhook post says what changed
    rules = NO_BUTTONS if webhook else buttons  # a webhook's message cannot change with them
    return render_parent(op.finding, now, reminder=op.reminder, change=change, buttons=rules)
