"""Block Kit rendering: snapshot-tested JSON, Slack's limits, escaping, mentions.

Snapshots live in ``snapshots/``. After an intended change, regenerate them with
``GUARDIAN_UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/unit/guardian/notify`` and review the diff.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.slack.blocks import (
    SlackPayload,
    format_mentions,
    marker,
    preview,
    render_detail,
    render_group,
    render_parent,
    render_reply,
    with_marker,
)
from guardian.engine.notify.findings import with_cost
from guardian.engine.notify.lifecycle import summarise
from guardian.model.notifications import HistoryEntry, Phase
from guardian.model.remediation_events import LadderStep
from testbed.slackapi.content_limits import parse_content
from tests.unit.guardian.notify.samples import (
    RULES,
    T0,
    firing,
    grace,
    reclaimed,
    shared,
    underused_memory,
)

SNAPSHOTS = Path(__file__).parent / "snapshots"
NOW = T0 + 3600


def _check_snapshot(name: str, payload: SlackPayload) -> None:
    path = SNAPSHOTS / f"{name}.json"
    actual = json.dumps(payload.to_json(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if os.environ.get("GUARDIAN_UPDATE_SNAPSHOTS") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"no snapshot {path}; run with GUARDIAN_UPDATE_SNAPSHOTS=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from {path}"
    # The fake Slack's validator applies Slack's Block Kit limits.
    parse_content(payload.to_json())


def test_firing_parent_snapshot() -> None:
    _check_snapshot("parent_firing", render_parent(firing(), NOW))


def test_text_preview_snapshot() -> None:
    """The example in docs/slack.md."""
    text = preview(render_parent(grace(), NOW))
    path = SNAPSHOTS / "parent_grace.txt"
    if os.environ.get("GUARDIAN_UPDATE_SNAPSHOTS") == "1":
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_grace_parent_snapshot() -> None:
    _check_snapshot("parent_grace", render_parent(grace(), NOW))


def test_reclaimed_parent_snapshot_shows_the_restore_command() -> None:
    payload = render_parent(reclaimed(), T0 + 7300)
    _check_snapshot("parent_reclaimed", payload)
    assert "guardian restore ml-research/Deployment/train-llm" in json.dumps(payload.blocks)


def test_restored_and_resolved_parent_snapshot() -> None:
    f = reclaimed().with_changes(
        phase=Phase.RESTORED, restore_command=None, next_step=None, resolved_at=T0 + 7260
    )
    payload = render_parent(with_cost(f, T0 + 9000, RULES.prices), T0 + 9000)
    _check_snapshot("parent_restored_resolved", payload)
    assert payload.blocks[0]["text"]["text"].startswith(":leftwards_arrow_with_hook: [RESTORED")


def test_resolved_parent_is_marked_resolved() -> None:
    f = firing().with_changes(phase=Phase.RESOLVED, resolved_at=NOW)
    payload = render_parent(f, NOW)
    _check_snapshot("parent_resolved", payload)
    assert payload.text.startswith("[RESOLVED]")
    assert payload.blocks[0]["text"]["text"].startswith(":white_check_mark: [RESOLVED]")


def test_reply_snapshot() -> None:
    entry = HistoryEntry(
        T0 + 3600,
        Phase.GRACE,
        "Grace period started (policy reclaim-idle-research).",
        next_step=LadderStep.RECLAIM,
        next_step_due=T0 + 7200,
    )
    _check_snapshot("reply_grace", render_reply(entry, grace()))


def test_group_summary_snapshot() -> None:
    findings = [
        firing().with_changes(
            episode=f"ep{i}",
            pod=f"worker-{i}",
            phase=Phase.RESOLVED if i == 2 else Phase.FIRING,
            resolved_at=NOW if i == 2 else None,
        )
        for i in range(4)
    ]
    summary = summarise("group:GpuIdle:ml-research:1", "GpuIdle", "ml-research", findings, NOW)
    _check_snapshot("group_summary", render_group(summary, NOW))


def test_fields_and_fallback_text() -> None:
    payload = render_parent(firing(), NOW)
    fields = {
        f["text"].split("\n")[0]: f["text"].split("\n")[1] for f in payload.blocks[2]["fields"]
    }
    assert fields == {
        "*Cluster*": "prod-eu",
        "*Namespace*": "ml-research",
        "*Workload*": "Deployment train-llm",
        "*GPU group*": "a100-80g",
        "*Node*": "gpu-node-12",
        "*GPU model*": "NVIDIA A100-SXM4-80GB",
        "*Peak utilization*": "1.2%",
        "*Memory used / total*": "3.0 GiB / 80.0 GiB (3.8%)",
        "*Idle for*": "1h30m",
        "*Cost*": "$4.10/h · $6.15 wasted so far",
    }
    assert payload.text == (
        "[FIRING] warning GpuIdle: ml-research/Deployment train-llm on gpu-node-12 - "
        "An allocated GPU has been idle for the whole idle window. <@U0ALICE> <!here>"
    )


def _fields_of(payload: SlackPayload) -> dict[str, str]:
    [block] = [b for b in payload.blocks if b["type"] == "section" and "fields" in b]
    return {f["text"].split("\n")[0]: f["text"].split("\n")[1] for f in block["fields"]}


def test_a_share_shows_the_share_and_costs_the_share() -> None:
    payload = render_parent(shared(), NOW)
    _check_snapshot("parent_share", payload)
    fields = _fields_of(payload)
    assert fields["*GPU share*"] == "25.0% of the GPU"
    # A quarter of the A100's $4.10/h, idle since the 30m window before it fired.
    assert fields["*Cost*"] == "$1.02/h · $1.54 wasted so far"
    assert "*Peak utilization*" not in fields  # the value is the share, not a utilization


def test_right_sizing_advice_is_its_own_section() -> None:
    payload = render_parent(underused_memory(), NOW)
    _check_snapshot("parent_advice", payload)
    advice = [b["text"]["text"] for b in payload.blocks if b["type"] == "section" and "text" in b]
    assert (
        "*Right-sizing:* MIG 2g.20gb or a 1/4 time-slice share would have held its peaks "
        "(10% of the memory, 25% SM use)." in advice
    )
    assert "Right-sizing" not in json.dumps(render_parent(firing(), NOW).blocks)


def test_more_than_ten_fields_keep_the_cost() -> None:
    f = shared().with_changes(evidence=replace(shared().evidence, peak_utilization=0.01))
    f = f.with_changes(
        evidence=replace(f.evidence, memory_used_bytes=2.0**30, memory_total_bytes=80 * 2.0**30)
    )
    names = list(_fields_of(render_parent(f, NOW)))
    assert len(names) == 10
    assert names[-1] == "*Cost*"
    assert "*Idle for*" not in names


def test_group_lines_show_the_share() -> None:
    findings = [shared().with_changes(episode=f"s{i}", pod=f"nb-{i}") for i in range(2)]
    group = render_group(summarise("g", "GpuShareIdle", "ml-research", findings, NOW), NOW)
    assert "`nb-0` · firing · gpu-node-12 · 25.0% of the GPU" in group.blocks[2]["text"]["text"]


def _long(n: int) -> str:
    return ("<&> " * n)[:n]


def test_limits_hold_for_huge_inputs() -> None:
    f = firing().with_changes(
        alertname="A" * 400,
        summary=_long(9000),
        gpu_model="M" * 5000,
        restore_command="r" * 5000,
        phase=Phase.RECLAIMED,
    )
    payload = render_parent(f, NOW)
    parse_content(payload.to_json())
    assert len(payload.blocks[0]["text"]["text"]) == 150
    assert all(
        len(b["text"]["text"]) <= 3000
        for b in payload.blocks
        if b["type"] == "section" and "text" in b
    )
    many = [firing().with_changes(episode=f"e{i}", pod=f"p{i}" * 50) for i in range(400)]
    group = render_group(summarise("g", "GpuIdle", "ns", many, NOW), NOW)
    parse_content(group.to_json())
    assert len(group.blocks) <= 50
    shown = group.blocks[2]["text"]["text"].split("\n")
    assert shown[-1] == f"… and {400 - len(shown) + 1} more (see the thread)"
    wide = [firing().with_changes(episode=f"e{i}", pod=f"p{i}" * 500) for i in range(40)]
    cut = render_group(summarise("g", "GpuIdle", "ns", wide, NOW), NOW)
    parse_content(cut.to_json())
    assert "more (see the thread)" in cut.blocks[2]["text"]["text"]


def test_user_text_is_escaped() -> None:
    f = firing().with_changes(summary="<!channel> & <@U1>", mentions=())
    payload = render_parent(f, NOW)
    assert payload.blocks[1]["text"]["text"] == "&lt;!channel&gt; &amp; &lt;@U1&gt;"


@pytest.mark.parametrize(
    ("tokens", "expected"),
    [
        (("U0ALICE",), "<@U0ALICE>"),
        (("@W0BOB",), "<@W0BOB>"),
        (("S0TEAM",), "<!subteam^S0TEAM>"),
        (("here", "@channel"), "<!here> <!channel>"),
        (("<@U1|alice>", "U1"), "<@U1>"),
        (("<!subteam^S1|team>", "<!here>"), "<!subteam^S1> <!here>"),
        (("@alice",), ""),  # a name: Slack does not notify on it, so it is not shown
        (("<b>",), ""),
        (("<!everyone>", "everyone", "@everyone"), ""),  # never from an annotation
        (("<https://evil.example/x|Restore now>", "U0OK"), "<@U0OK>"),
        (("<!channel|Runbook>",), "<!channel>"),  # ready-made syntax: its label is dropped
        (("u0lower", "U0&x", "S0>", "<@U0|a>b>"), ""),
    ],
)
def test_mentions(tokens: tuple[str, ...], expected: str) -> None:
    assert format_mentions(tokens) == expected


def test_marker_goes_on_the_first_block_and_is_stable() -> None:
    payload = with_marker(render_parent(firing(), NOW), "ep:alert:firing:post")
    assert payload.blocks[0]["block_id"] == marker("ep:alert:firing:post")
    assert len(marker("x" * 1000)) <= 255
    assert marker("a") != marker("b")


def test_detail_reply_has_no_header() -> None:
    payload = render_detail(firing(), NOW)
    assert payload.blocks[0]["type"] == "section"
    assert "Deployment train-llm" in payload.blocks[0]["text"]["text"]
    parse_content(payload.to_json())


def _field_texts(payload: SlackPayload) -> list[Any]:
    return [b for b in payload.blocks if b["type"] == "section" and "fields" in b]


def test_unknown_values_are_left_out() -> None:
    f = firing().with_changes(gpu_model=None, cost=None, node=None, gpu_group=None, cluster=None)
    [fields] = _field_texts(render_parent(f, NOW))
    names = [x["text"].split("\n")[0] for x in fields["fields"]]
    assert names == [
        "*Namespace*",
        "*Workload*",
        "*Peak utilization*",
        "*Memory used / total*",
        "*Idle for*",
    ]
