"""The demo's console timeline: one line per event, seconds since the start, a source
column, and indented detail lines (a Slack message's text)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TextIO

from guardian.adapters.slack.blocks import SlackPayload, preview

SOURCE_WIDTH = 10
_HIDDEN_LABELS = frozenset({"alertname", "severity", "guardian_class", "cluster", "job"})


def format_line(elapsed: float, source: str, text: str) -> str:
    return f"[{elapsed:6.1f}s] {source:<{SOURCE_WIDTH}} {text}"


def format_detail(lines: Iterable[str], prefix: str = "│ ") -> list[str]:
    indent = " " * (len(format_line(0.0, "", "")) - 1)
    return [f"{indent}{prefix}{line}".rstrip() for line in lines]


def alert_subject(labels: Mapping[str, str]) -> str:
    """Who an alert is about, briefly: ``research/notebook-alice-… on node1 GPU 1``."""
    parts = []
    if labels.get("namespace") and labels.get("pod"):
        parts.append(f"{labels['namespace']}/{labels['pod']}")
    if labels.get("node"):
        where = f"on {labels['node']}"
        if labels.get("gpu"):
            where += f" GPU {labels['gpu']}"
        parts.append(where)
    if labels.get("instance") and not labels.get("node"):
        parts.append(f"target {labels['instance']}")
    if labels.get("reason"):
        parts.append(f"({labels['reason']})")
    if not parts:
        rest = {k: v for k, v in labels.items() if k not in _HIDDEN_LABELS}
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(rest.items())) or "(no labels)")
    return " ".join(parts)


def slack_preview(text: str, blocks: list[dict[str, object]] | None) -> list[str]:
    """A Slack message as plain lines: its blocks through the notifier's own text
    preview, else its text."""
    if blocks:
        return preview(SlackPayload(text, list(blocks))).rstrip("\n").splitlines()
    return text.splitlines()


def slack_title(text: str, blocks: list[dict[str, object]] | None) -> str:
    """The header of a message (its first block), else its first line."""
    for block in blocks or []:
        if block.get("type") == "header":
            header = block.get("text")
            if isinstance(header, dict):
                return str(header.get("text", ""))
    return text.splitlines()[0] if text else ""


@dataclass
class Timeline:
    """Prints events as they come; ``clock`` gives monotonic seconds."""

    clock: Callable[[], float]
    out: TextIO = field(default_factory=lambda: sys.stdout)
    start: float = 0.0

    def __post_init__(self) -> None:
        self.start = self.clock()

    @property
    def elapsed(self) -> float:
        return self.clock() - self.start

    def event(self, source: str, text: str, detail: Iterable[str] = ()) -> None:
        lines = [format_line(self.elapsed, source, text), *format_detail(detail)]
        self.out.write("\n".join(lines) + "\n")
        self.out.flush()

    def heading(self, text: str) -> None:
        self.out.write(f"\n== {text}\n")
        self.out.flush()

    def plain(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
