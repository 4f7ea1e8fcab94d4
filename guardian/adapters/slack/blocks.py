"""Render neutral findings into Slack Block Kit, within Slack's limits.

Limits (api.slack.com/reference/block-kit): at most 50 blocks, 3,000 characters per
section text, 10 fields of 2,000, 150 for a header's plain text, 255 for a block_id.
Every payload carries the plain ``text`` fallback (notifications and screen readers).
Everything from outside is escaped there too, mentions are validated Slack IDs and the
runbook is a link only when it is an ``http(s)`` URL (guardian/adapters/slack/mrkdwn.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from guardian.adapters.slack import pipeline_blocks as pipeline
from guardian.adapters.slack.mrkdwn import MAX_SECTION, Block, date, escape, link
from guardian.adapters.slack.mrkdwn import context as _context
from guardian.adapters.slack.mrkdwn import cut as _cut
from guardian.adapters.slack.mrkdwn import format_mentions as format_mentions
from guardian.adapters.slack.mrkdwn import header as _header
from guardian.adapters.slack.mrkdwn import section as _section
from guardian.adapters.slack.mrkdwn import text as _text
from guardian.adapters.slack.mrkdwn import user as _user
from guardian.engine.notify.buttons import (
    LABELS,
    NO_BUTTONS,
    ButtonAction,
    ButtonRules,
    commands,
    offered,
)
from guardian.engine.notify.findings import idle_for
from guardian.model.notifications import Finding, GroupSummary, HistoryEntry, Phase
from guardian.model.reclaim import PARTLY_IDLE

MAX_BLOCKS = 50
MAX_FIELDS = 10
MAX_FIELD = 2000
MAX_TEXT = 40000
MAX_GROUP_LINES = 25

_STATUS = {
    Phase.FIRING: (":red_circle:", "FIRING"),
    Phase.GRACE: (":hourglass_flowing_sand:", "GRACE PERIOD"),
    Phase.RECLAIMED: (":recycle:", "RECLAIMED"),
    Phase.RESTORED: (":leftwards_arrow_with_hook:", "RESTORED"),
    Phase.RESOLVED: (":white_check_mark:", "RESOLVED"),
}


@dataclass(frozen=True)
class SlackPayload:
    text: str
    blocks: list[Block]

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "blocks": self.blocks}


def marker(idem: str) -> str:
    """The block_id that identifies a message in history, for crash reconciliation."""
    return "gg-" + hashlib.sha256(idem.encode()).hexdigest()[:24]


def with_marker(payload: SlackPayload, idem: str) -> SlackPayload:
    first, *rest = payload.blocks
    return SlackPayload(payload.text, [{**first, "block_id": marker(idem)}, *rest])


def _percent(ratio: float | None) -> str | None:
    return None if ratio is None else f"{ratio * 100:.1f}%"


def _gib(value: float) -> str:
    return f"{value / 2**30:.1f} GiB"


def _workload(f: Finding) -> str:
    if f.workload is not None:
        return f"{f.workload.kind} {f.workload.name}"
    return f"Pod {f.pod}" if f.pod else "unknown"


def _memory(f: Finding) -> str | None:
    e = f.evidence
    if e.memory_used_bytes is not None and e.memory_total_bytes:
        share = e.memory_used_bytes / e.memory_total_bytes
        return f"{_gib(e.memory_used_bytes)} / {_gib(e.memory_total_bytes)} ({share * 100:.1f}%)"
    if e.peak_memory_ratio is not None:
        return f"peak {_percent(e.peak_memory_ratio)} of total"
    return None


def _share(f: Finding) -> str | None:
    """The part of a shared GPU the pod holds (its cost is that part's)."""
    share = f.evidence.share
    return None if share is None else f"{_percent(share)} of the GPU"


def _fields(f: Finding, now: float) -> list[Block]:
    pairs = pipeline.fields(f, now) if pipeline.is_pipeline(f.labels) else _waste_fields(f, now)
    shown = [(k, v) for k, v in pairs if v]
    if len(shown) > MAX_FIELDS:  # the cost, last, matters more than the fields before it
        shown = shown[: MAX_FIELDS - 1] + shown[-1:]
    return [_text(f"*{k}*\n{escape(v)}", MAX_FIELD) for k, v in shown]


def _waste_fields(f: Finding, now: float) -> list[tuple[str, str | None]]:
    pairs: list[tuple[str, str | None]] = [
        ("Cluster", f.cluster),
        ("Namespace", f.namespace),
        ("Workload", _workload(f)),
        ("GPU group", f.gpu_group),
        ("Node", f.node),
        ("GPU model", f.gpu_model),
        ("GPU share", _share(f)),
        ("Peak utilization", _percent(f.evidence.peak_utilization)),
        ("Memory used / total", _memory(f)),
        ("Idle for", idle_for(f, now) if f.evidence.idle_since is not None else None),
    ]
    if f.cost is not None:
        c = f.cost
        per_gpu = f" ({f.gpus} GPUs)" if f.gpus > 1 else ""
        wasted = f"{c.currency}{c.waste_so_far:.2f} wasted so far"
        pairs.append(("Cost", f"{c.currency}{c.per_hour:.2f}/h{per_gpu} · {wasted}"))
    return pairs


def _subject(f: Finding, workload: str) -> str:
    """What a line is about: a pipeline alert's affected thing, else ``workload``."""
    return pipeline.subject(f) if pipeline.is_pipeline(f.labels) else workload


def _status_line(f: Finding) -> str | None:
    if f.phase is Phase.RECLAIMED and f.restore_command:
        return f"*Reclaimed.* To restore:\n```{escape(f.restore_command)}```"
    if f.open and f.exempted_by is not None:
        return f"*Exempted* by {_user(f.exempted_by)}: GPU Guardian leaves it alone."
    if f.open and f.kept_until is not None and f.kept_by is not None:
        return f"*Kept* until {date(f.kept_until)} by {_user(f.kept_by)}."
    if f.open and f.reason and f.reason.startswith(PARTLY_IDLE):
        # Only part of the workload is idle: which parts, and that nothing is stopped.
        return f"*Partly idle:* {escape(f.reason.removeprefix(PARTLY_IDLE).lstrip(', '))}"
    if f.next_step is not None and f.next_step_due is not None and f.open:
        return f"*Next step:* {f.next_step.value} due {date(f.next_step_due)}"
    if f.next_step is not None and f.open:
        return f"*Next step:* {f.next_step.value}"
    return None


def status_title(f: Finding) -> str:
    emoji, status = _STATUS[f.phase]
    if f.resolved_at is not None and f.phase is not Phase.RESOLVED:
        status += " · RESOLVED"
    what = pipeline.title(f) if pipeline.is_pipeline(f.labels) else f.alertname
    return f"{emoji} [{status}] {f.severity} · {what}"


_STYLES = {ButtonAction.KEEP_4H: "primary", ButtonAction.RECLAIM_NOW: "danger"}
_CONFIRM = {
    ButtonAction.EXEMPT: "GPU Guardian will leave this workload alone until the annotation "
    "is removed.",
    ButtonAction.RECLAIM_NOW: "The workload is stopped now, before its grace period ends.",
}


def _button(f: Finding, action: ButtonAction) -> Block:
    button: Block = {
        "type": "button",
        "action_id": action.value,
        "text": {"type": "plain_text", "text": LABELS[action], "emoji": True},
        "value": f.episode,
    }
    if action in _STYLES:
        button["style"] = _STYLES[action]
    if action in _CONFIRM:
        button["confirm"] = {
            "title": {"type": "plain_text", "text": f"{LABELS[action]}?"},
            "text": _text(_CONFIRM[action]),
            "confirm": {"type": "plain_text", "text": LABELS[action]},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
    return button


def _actions(f: Finding, buttons: ButtonRules) -> Block | None:
    shown = offered(f, buttons)
    if not shown:
        return None
    return {
        "type": "actions",
        "block_id": f"gg-actions-{f.episode}"[:255],
        "elements": [_button(f, a) for a in shown],
    }


def _commands(f: Finding, now: float) -> Block | None:
    lines = commands(f, now)
    if not lines or f.phase is Phase.RECLAIMED:  # the status line shows the restore command
        return None
    return _context("Without buttons: ```" + escape("\n".join(lines)) + "```")


def render_parent(
    f: Finding,
    now: float,
    *,
    reminder: bool = False,
    change: HistoryEntry | None = None,
    buttons: ButtonRules = NO_BUTTONS,
) -> SlackPayload:
    """An episode's parent message: the whole current state. ``change`` (webhook mode,
    where a change is a new message) says what just happened; ``buttons``: which of the
    episode's buttons to offer (none without interactivity)."""
    blocks: list[Block] = [_header(status_title(f))]
    lead = escape(
        pipeline.lead(f)
        if pipeline.is_pipeline(f.labels)
        else f.summary or f.description or f.alertname
    )
    if change is not None:
        lead = f"*{escape(change.text)}*\n{lead}"
    if mentions := format_mentions(f.mentions):
        lead += "\n" + mentions
    blocks.append(_section(lead))
    blocks.append({"type": "section", "fields": _fields(f, now)})
    if f.advice:
        blocks.append(_section(f"*Right-sizing:* {escape(f.advice)}"))
    status = _status_line(f)
    if status:
        blocks.append(_section(status))
    actions = _actions(f, buttons)
    if actions is not None:
        blocks.append(actions)
    typed = _commands(f, now)
    if typed is not None:
        blocks.append(typed)
    notes = []
    if f.resolved_at is not None:
        notes.append(f":white_check_mark: Alert resolved {date(f.resolved_at)}")
    if f.evaluation_note:
        notes.append(f":warning: {escape(f.evaluation_note)}")
    if reminder:
        notes.append(":bell: Reminder")
    if notes:
        blocks.append(_context(*notes))
    links = [_episode_label(f), f"since {date(f.active_at)}"]
    if f.policy:
        links.append(f"policy `{escape(f.policy)}`")
    if f.runbook_url:
        links.append(link(f.runbook_url, "Runbook"))
    blocks.append(_context(" · ".join(links)))
    return SlackPayload(_cut(fallback_text(f), MAX_TEXT), blocks)


def fallback_text(f: Finding) -> str:
    """The plain ``text`` (Slack parses it too): escaped, then the validated mentions."""
    _, status = _STATUS[f.phase]
    text = pipeline.fallback(f, status) if pipeline.is_pipeline(f.labels) else _about(f, status)
    mentions = format_mentions(f.mentions)
    return escape(text) + (f" {mentions}" if mentions else "")


def _about(f: Finding, status: str) -> str:
    where = f"{f.namespace}/{_workload(f)}" if f.namespace else _workload(f)
    text = f"[{status}] {f.severity} {f.alertname}: {where}"
    if f.node:
        text += f" on {f.node}"
    if f.resolved_at is not None and f.phase is not Phase.RESOLVED:
        text += " (alert resolved)"
    if f.summary:
        text += f" - {f.summary}"
    return text


def render_reply(entry: HistoryEntry, f: Finding | None, alertname: str = "") -> SlackPayload:
    """One history line in the thread; ``f`` is the episode it is about (None: the group)."""
    emoji, status = _STATUS[entry.phase]
    subject, about = _reply_about(f, alertname)
    actor = f"{_user(entry.actor)} " if entry.actor else ""
    line = f"{emoji} *{status}*{subject} · {actor}{escape(entry.text)}"
    if entry.next_step is not None and entry.next_step_due is not None:
        line += f"\nNext: {entry.next_step.value} due {date(entry.next_step_due)}"
    if f is not None and entry.phase is Phase.RECLAIMED and f.restore_command:
        line += f"\nRestore with `{escape(f.restore_command)}`"
    mentions = format_mentions(entry.mentions)
    if mentions:
        line += "\n" + mentions
    text = f"[{status}] {escape(about)}: {actor}{escape(entry.text)}"
    if mentions:
        text += " " + mentions
    footer = date(entry.at) if f is None else f"{date(entry.at)} · {_episode_label(f)}"
    return SlackPayload(_cut(text, MAX_TEXT), [_section(line), _context(footer)])


def _episode_label(f: Finding) -> str:
    """The episode id a person can match to the workload's annotation, its Events, the
    ledger and ``guardian status``: the ladder's; before any ladder step, the alert's own."""
    if f.ladder_episode:
        return f"Episode `{f.ladder_episode}`"
    return f"Alert episode `{f.episode}`"


def _reply_about(f: Finding | None, alertname: str) -> tuple[str, str]:
    """A reply's subject (mrkdwn, after its status) and what its plain text is about."""
    if f is None:
        return "", alertname
    if pipeline.is_pipeline(f.labels):
        where = pipeline.where(f)
        return (f" `{escape(where)}`", f"{f.alertname} ({where})") if where else ("", f.alertname)
    subject = "" if f.pod is None else f" `{escape(f.pod)}`"
    return subject, f"{f.alertname} {f.namespace or ''}/{f.pod or ''}"


def render_detail(f: Finding, now: float, buttons: ButtonRules = NO_BUTTONS) -> SlackPayload:
    """A grouped episode's details, as a reply in its group's thread."""
    payload = render_parent(f, now, buttons=buttons)
    blocks = [
        _section(f"*{escape(_subject(f, _workload(f)))}* · {escape(status_title(f))}"),
        *payload.blocks[1:],
    ]
    return SlackPayload(payload.text, blocks)


def render_group(s: GroupSummary, now: float) -> SlackPayload:
    """A group's parent: counts per phase and one line per episode; details in the thread."""
    n = len(s.findings)
    open_count = sum(1 for f in s.findings if f.open)
    emoji = _STATUS[Phase.FIRING][0] if open_count else _STATUS[Phase.RESOLVED][0]
    title = f"{emoji} {n} x {s.alertname} in {s.namespace} ({s.severity})"
    counts = " · ".join(f"{_STATUS[p][1].lower()} {s.count(p)}" for p in Phase if s.count(p))
    blocks: list[Block] = [_header(title), _section(f"*{counts}*\nDetails are in the thread.")]
    lines: list[str] = []
    budget = MAX_SECTION - 40  # room for the "and N more" line
    for f in s.findings[:MAX_GROUP_LINES]:
        peak = _percent(f.evidence.peak_utilization)
        bits = [f"`{escape(_subject(f, f.pod or _workload(f)))}`", _STATUS[f.phase][1].lower()]
        if f.node:
            bits.append(escape(f.node))
        if peak:
            bits.append(f"peak {peak}")
        share = _share(f)
        if share:
            bits.append(share)
        line = _cut(" · ".join(bits), 200)
        if sum(len(x) + 1 for x in lines) + len(line) > budget:
            break
        lines.append(line)
    if n > len(lines):
        lines.append(f"… and {n - len(lines)} more (see the thread)")
    blocks.append(_section("\n".join(lines)))
    costs = [(f, f.cost) for f in s.findings if f.cost is not None]
    if costs:
        cur = costs[0][1].currency
        rate = sum(c.per_hour for f, c in costs if f.open)
        wasted = sum(c.waste_so_far for _, c in costs)
        blocks.append(_context(f"Cost {cur}{rate:.2f}/h open · {cur}{wasted:.2f} wasted so far"))
    runbook = next((f.runbook_url for f in s.findings if f.runbook_url), None)
    tail = [f"updated {date(now)}"]
    if runbook:
        tail.append(link(runbook, "Runbook"))
    blocks.append(_context(" · ".join(tail)))
    text = escape(f"{n} x {s.alertname} in {s.namespace} ({counts})")
    return SlackPayload(_cut(text, MAX_TEXT), blocks[:MAX_BLOCKS])


def preview(payload: SlackPayload) -> str:
    """A plain-text rendering of the blocks, for docs, logs and the demo."""
    out: list[str] = []
    for block in payload.blocks:
        kind = block.get("type")
        if kind == "header":
            out.append(block["text"]["text"])
            out.append("=" * len(block["text"]["text"]))
        elif kind == "section":
            if "text" in block:
                out.append(block["text"]["text"])
            for item in block.get("fields", []):
                name, _, value = item["text"].partition("\n")
                out.append(f"{name.strip('*')}: {value}")
        elif kind == "context":
            out.append(" | ".join(e.get("text", "") for e in block.get("elements", [])))
        elif kind == "actions":
            out.append("  ".join(f"[ {e['text']['text']} ]" for e in block.get("elements", [])))
        out.append("")
    text = "\n".join(out).rstrip() + "\n"
    text = _DATE.sub(r"\1", text)  # a date shows its fallback
    return _LINK.sub(r"\2 (\1)", text)


_DATE = re.compile(r"<!date\^[^|>]*\|([^>]*)>")
_LINK = re.compile(r"<(https?://[^|>]+)\|([^>]+)>")
