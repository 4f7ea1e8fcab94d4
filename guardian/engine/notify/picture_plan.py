"""Which episodes get a picture of their evidence in their thread, and what it shows.

Pure: the planner asks ``picture_ops`` for the changes it plans; each picture is a
``PictureRequest`` (the queries, the range, the words) stored with the outbox row and
drawn at delivery from Prometheus (``app/notify/picture_delivery.py``). A picture is sent when an
episode's own parent is first posted, and again when its workload is reclaimed. A
grouped episode (its parent is a group's summary), a webhook (no thread) and an alert
without a picture query or an idle start get none.

Queries are PromQL templates whose ``$label`` (or ``${label}``) is the alert's label
value as a string literal's content; a label the alert lacks is the empty string, which
PromQL matches as "no such label".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from string import Template

from guardian.engine.notify.lifecycle import EpisodeChange, Op, OpKind
from guardian.model.evidence_picture import Moment, PictureRequest, PictureRules
from guardian.model.labels import LabelSet
from guardian.model.notifications import Finding, Phase

POINTS = 240  # samples per series: finer than the picture's pixels per point needs
MIN_STEP_S = 1.0
ALT_MAX = 1000  # Slack's limit on a file's alt text


def promql_string_content(value: str) -> str:
    """``value`` inside a double-quoted PromQL string (Go's escapes)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class _Labels(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return ""  # an absent label: PromQL's `label=""` matches its absence


def fill(template: str, labels: LabelSet) -> str:
    """The template with each ``$label`` replaced by the label's escaped value."""
    values = _Labels({k: promql_string_content(v) for k, v in labels.items()})
    return Template(template).safe_substitute(values)


def picture_ops(
    change: EpisodeChange, ops: Sequence[Op], before: Phase | None, rules: PictureRules | None
) -> list[Op]:
    """The picture that goes with one change's ``ops``, if any: when the episode's own
    parent is first posted, and when the change is the reclaim (``before`` is the
    episode's phase before it)."""
    if rules is None or not ops or any(op.summary is not None for op in ops):
        return []
    after = change.after
    posted = any(op.kind is OpKind.POST and op.entry is None for op in ops)
    reclaimed = after.phase is Phase.RECLAIMED and before not in (None, Phase.RECLAIMED)
    if reclaimed:
        moment = Moment.RECLAIMED
    elif posted and after.phase is not Phase.RECLAIMED and after.open:
        moment = Moment.OPENED
    else:
        return []
    request = picture_request(after, moment, change.entry.at, rules)
    if request is None:
        return []
    idem = f"{change.idem}:picture"
    return [Op(OpKind.PICTURE, ops[0].thread, idem, finding=after, picture=request)]


def picture_request(
    finding: Finding, moment: Moment, now: float, rules: PictureRules
) -> PictureRequest | None:
    query = rules.queries.get(finding.alertname)
    since = finding.evidence.idle_since
    if query is None or since is None:
        return None
    end = finding.reclaimed_at if moment is Moment.RECLAIMED and finding.reclaimed_at else now
    window = max(end - since, MIN_STEP_S)
    start = since - rules.margin * window
    step = max(MIN_STEP_S, round((end - start) / POINTS, 3))
    labels = finding.labels
    episode = finding.ladder_episode or finding.episode
    who = _who(finding)
    span = f"from {_clock(since)} to {_clock(end)} UTC"
    floor = "" if query.floor is None else f", against the {_percent(query.floor)} noise floor"
    legends = ", ".join(name for name, _ in query.series)
    words = "at the reclaim" if moment is Moment.RECLAIMED else "when the alert fired"
    return PictureRequest(
        episode=episode,
        moment=moment,
        title=f"{finding.alertname}: {query.title} of {who}",
        start=start,
        end=end,
        step=step,
        window=(since, end),
        series=tuple((name, fill(t, labels)) for name, t in query.series),
        floor=query.floor,
        allocation=None if query.allocation is None else fill(query.allocation, labels),
        filename=f"evidence-{episode}-{moment.value}.png",
        alt_text=f"{legends} of {who} {span}{floor}; the idle window is shaded."[:ALT_MAX],
        comment=f"The evidence {words}: {legends} {span}{floor}.",
    )


def _who(finding: Finding) -> str:
    pod = f"{finding.namespace}/{finding.pod}" if finding.namespace and finding.pod else ""
    gpu = finding.labels.get("gpu") or finding.labels.get("uuid") or ""
    where = f"GPU {gpu}" + (f" on {finding.node}" if finding.node else "") if gpu else ""
    return ", ".join(p for p in (pod, where) if p) or finding.alertname


def _clock(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")


def _percent(ratio: float) -> str:
    value = ratio * 100
    return f"{value:.0f}%" if math.isclose(value, round(value)) else f"{value:.1f}%"
