"""The outcomes the demo promises, each checked against what the observers recorded."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from guardian.engine.picture.evidence_chart import SERIES_COLOURS
from guardian.engine.picture.png import decode_png
from guardian.model.remediation_events import LadderStep
from guardian_common.words import plural
from testbed.demo.config import EVALUATION_INTERVAL_S
from testbed.demo.fleet import (
    CHAT,
    DOOMED_NODE,
    INFERENCE,
    NOTEBOOK,
    SHARED_NOTEBOOK,
    SWEEP,
    TRAINING,
    UNLABELLED,
    WORKLOADS,
)
from testbed.demo.observers import AlertObserver, KubeObserver, LedgerObserver, shared_episodes
from testbed.slackapi import FakeSlack, Message, UploadedFile

ORIGINAL = "gpu-guardian.io/original-replicas"
SNOOZE = "gpu-guardian.io/snooze-until"
# A reclaim runs on the first cycle at or after its due time (within one evaluation
# interval), and is recorded when its write is made, within that cycle (one more).
RECLAIM_WITHIN_S = 2.0 * EVALUATION_INTERVAL_S


@dataclass(frozen=True)
class Outcome:
    name: str
    ok: bool | None  # None: not checked (e.g. Slack checks when sending to real Slack)
    detail: str

    def line(self) -> str:
        mark = {True: "✓", False: "✗", None: "-"}[self.ok]
        return f"  {mark} {self.name}: {self.detail}"


@dataclass
class Failover:
    """The leader the demo killed, and who went on."""

    killed: str
    killed_at: float  # monotonic
    due: float | None  # the notebook's reclaim due time, as the shared state said then
    survivor: str | None = None
    took_over_s: float | None = None
    restarted: bool = False


@dataclass
class Evidence:
    """Everything the checks read."""

    alerts: AlertObserver
    ledger: LedgerObserver
    kube: KubeObserver
    slack: FakeSlack | None
    channel: str
    doomed_instance: str
    unassigned_series: int = 0  # series with gpu_group="unassigned" for the unlabelled pod
    kept_pressed: bool = False  # the on-call pressed Keep 4h on the sweep's message
    restore_output: str = ""
    killed: bool = False
    failover: Failover | None = None


def _parents(ev: Evidence, needle: str) -> list[Message]:
    if ev.slack is None:
        return []
    return [m for m in ev.slack.messages(ev.channel) if needle in m.text]


def _share_parents(ev: Evidence) -> list[Message]:
    posted = _parents(ev, SHARED_NOTEBOOK.name)
    return [p for p in posted if "50.0% of the GPU" in json.dumps(p.blocks)]


def _pictures(ev: Evidence) -> list[UploadedFile]:
    """The evidence pictures shared in the notebook's thread, oldest first."""
    if ev.slack is None:
        return []
    threads = {p.ts for p in _parents(ev, NOTEBOOK.name)}
    return [f for f in ev.slack.files() if f.completed and f.thread_ts in threads]


def slack_posted(ev: Evidence) -> bool:
    """What the Slack outcomes judge is in the channel (true when not sending to the
    fake): the end of the story waits for it, not only for a quiet outbox."""
    if ev.slack is None:
        return True
    posted = bool(_share_parents(ev)) and bool(_parents(ev, "GpuMemoryUnderutilized"))
    return posted and len(_pictures(ev)) >= 2


def evidence_pictures(ev: Evidence) -> Outcome:
    name = "Slack: the evidence as a picture in the thread, at the alert and at the reclaim"
    if ev.slack is None:
        return Outcome(name, None, "not checked: sent to real Slack")
    files = _pictures(ev)
    moments = [f.filename.rsplit("-", 1)[-1].removesuffix(".png") for f in files]
    drawn = [_has_series(f.content) for f in files]
    ok = moments == ["opened", "reclaimed"] and all(drawn)
    pairs = zip(moments, files, strict=True)
    sizes = ", ".join(f"{m} {len(f.content) // 1024} KB" for m, f in pairs)
    detail = f"{plural(len(files), 'PNG')} in {NOTEBOOK.name}'s thread ({sizes or 'none'})"
    if not all(drawn):
        detail += "; a picture without its series drawn"
    return Outcome(name, ok, detail)


def _has_series(png: bytes) -> bool:
    try:
        width, _height, pixels = decode_png(png)
    except ValueError:
        return False
    colours = {bytes(c) for c in SERIES_COLOURS}  # lines at one level hide each other
    painted = sum(1 for i in range(0, len(pixels), 3) if pixels[i : i + 3] in colours)
    return painted > width // 4  # a line across the plot, at least


def notebook_notified(ev: Evidence) -> Outcome:
    name = "idle notebook notified"
    notes = ev.ledger.find(NOTEBOOK.ref, "notify")
    fired = ev.alerts.ever("GpuIdle", namespace=NOTEBOOK.namespace, workload=NOTEBOOK.name)
    ok = bool(notes) and bool(fired)
    return Outcome(name, ok, f"GpuIdle fired {len(fired)}x, notify steps applied: {len(notes)}")


def notebook_annotated(ev: Evidence) -> Outcome:
    steps = ev.ledger.find(NOTEBOOK.ref, "annotate")
    flagged = [
        a
        for r, a in ev.kube.ever(NOTEBOOK.namespace, NOTEBOOK.name)
        if r == NOTEBOOK.replicas and "gpu-guardian.io/flagged-at" in a
    ]
    detail = f"annotate steps applied: {len(steps)}; flagged while still running: {bool(flagged)}"
    return Outcome("idle notebook annotated", bool(steps) and bool(flagged), detail)


def notebook_reclaimed(ev: Evidence) -> Outcome:
    zero = [a for r, a in ev.kube.ever(NOTEBOOK.namespace, NOTEBOOK.name) if r == 0]
    recorded = zero[0].get(ORIGINAL) if zero else None
    ok = recorded == str(NOTEBOOK.replicas)
    detail = f"scaled to 0 with {ORIGINAL}={recorded}" if zero else "never scaled to 0"
    return Outcome("idle notebook reclaimed", ok, detail)


def _untouched(ev: Evidence, ns: str, name: str, replicas: int) -> tuple[bool, str]:
    states = ev.kube.ever(ns, name)
    changed = [s for s in states if s != (replicas, {})]
    steps = [e for e in ev.ledger.events if (e.workload.namespace, e.workload.name) == (ns, name)]
    if changed or steps:
        return False, f"changed: {changed[:2]}, ledger steps: {[e.step.value for e in steps]}"
    return True, f"replicas stayed {replicas}, no annotations, no ladder steps"


def training_untouched(ev: Evidence) -> Outcome:
    ok, detail = _untouched(ev, TRAINING.namespace, TRAINING.name, TRAINING.replicas)
    idle = ev.alerts.ever(
        "GpuIdle", state="pending", namespace=TRAINING.namespace, workload=TRAINING.name
    )
    if idle:
        ok, detail = False, f"GpuIdle went pending for the busy training: {idle[0]}"
    return Outcome("busy training untouched", ok, detail)


def inference_notify_only(ev: Evidence) -> Outcome:
    fired = ev.alerts.ever(
        "GpuMemoryUnderutilized", namespace=INFERENCE.namespace, workload=INFERENCE.name
    )
    ok, detail = _untouched(ev, INFERENCE.namespace, INFERENCE.name, INFERENCE.replicas)
    ok = ok and bool(fired)
    if not fired:
        detail = "GpuMemoryUnderutilized never fired for it"
    elif ev.slack is not None:
        posted = _parents(ev, "GpuMemoryUnderutilized")
        ok = ok and bool(posted)
        detail = f"GpuMemoryUnderutilized fired and posted ({len(posted)} message); {detail}"
    return Outcome("low-memory inference: memory alert, notify only", ok, detail)


def shared_idle_pod_notified(ev: Evidence) -> Outcome:
    """On the time-sliced GPU: the idle pod's share is reported, its busy neighbour is not."""
    name = "shared GPU: the idle pod is notified, its busy neighbour untouched"
    idle = SHARED_NOTEBOOK
    fired = ev.alerts.ever("GpuShareIdle", namespace=idle.namespace, workload=idle.name)
    neighbour = [
        a
        for alert in ("GpuShareIdle", "GpuIdle")
        for state in ("pending", "firing")
        for a in ev.alerts.ever(alert, state, namespace=CHAT.namespace, workload=CHAT.name)
    ]
    ok, detail = _untouched(ev, CHAT.namespace, CHAT.name, CHAT.replicas)
    ok = ok and bool(fired) and not neighbour
    detail = f"GpuShareIdle fired {len(fired)}x for {idle.name}; {CHAT.name}: {detail}"
    if neighbour:
        detail += f"; but {neighbour[0]['alertname']} went {len(neighbour)}x for {CHAT.name}"
    if ev.slack is not None:
        shares = _share_parents(ev)
        ok = ok and bool(shares) and not _parents(ev, CHAT.name)
        detail += f"; posted with its 50% share: {len(shares)} message"
    return Outcome(name, ok, detail)


def unlabelled_pod_grouped(ev: Evidence) -> Outcome:
    ok = ev.unassigned_series > 0
    who = f"{UNLABELLED.namespace}/{UNLABELLED.name}"
    detail = f'{ev.unassigned_series} series of {who} carry gpu_group="unassigned"'
    return Outcome("pod without group label: gpu_group=unassigned", ok, detail)


def dead_exporter(ev: Evidence) -> Outcome:
    pipeline = ev.alerts.ever("GpuExporterDown", instance=ev.doomed_instance)
    pipeline += ev.alerts.ever("GpuExporterDown", node=DOOMED_NODE)
    pipeline += ev.alerts.ever("GpuExporterStale", node=DOOMED_NODE)
    on_node = [w for w in WORKLOADS if any(p.node == DOOMED_NODE for p in w.placements)]
    reclaims = [e for w in on_node for e in ev.ledger.find(w.ref, "reclaim")]
    scaled = [
        w.ref for w in on_node if any(r != w.replicas for r, _ in ev.kube.ever(w.namespace, w.name))
    ]
    names = sorted(
        {a["alertname"] + (f"({a['reason']})" if a.get("reason") else "") for a in pipeline}
    )
    ok = ev.killed and bool(pipeline) and not reclaims and not scaled
    touched = [e.workload.name for e in reclaims] + scaled
    detail = (
        f"pipeline alerts fired: {', '.join(names) or 'none'}; "
        f"reclaimed on {DOOMED_NODE}: {', '.join(touched) or 'nothing'}"
    )
    return Outcome(f"dead exporter on {DOOMED_NODE}", ok, detail)


def slack_threads(ev: Evidence) -> Outcome:
    name = "Slack: one parent per episode, updated, with a thread"
    if ev.slack is None:
        return Outcome(name, None, "not checked: sent to real Slack")
    parents = _parents(ev, NOTEBOOK.name)
    if len(parents) != 1:
        return Outcome(name, False, f"{len(parents)} parent messages for {NOTEBOOK.name}")
    p = parents[0]
    ok = p.update_count >= 2 and len(p.replies) >= 2
    sweep = _parents(ev, SWEEP.name)
    if len(sweep) > 1:
        ok = False
    detail = (
        f"{NOTEBOOK.name}: 1 parent, {plural(p.update_count, 'update')}, "
        f"{plural(len(p.replies), 'thread reply', 'thread replies')}; "
        f"{SWEEP.name}: {plural(len(sweep), 'parent')}"
    )
    return Outcome(name, ok, detail)


def kept_from_slack(ev: Evidence) -> Outcome:
    name = f"Slack: Keep 4h on {SWEEP.name} snoozes it, thread says who and until when"
    if ev.slack is None:
        return Outcome(name, None, "not checked: sent to real Slack")
    if not ev.kept_pressed:
        return Outcome(name, False, "its message never showed the buttons")
    snoozed = any(SNOOZE in a for _, a in ev.kube.ever(SWEEP.namespace, SWEEP.name))
    echo = [r.text for p in _parents(ev, SWEEP.name) for r in p.replies if "kept it" in r.text]
    ok = snoozed and len(echo) == 1
    detail = f"snooze-until set: {snoozed}; thread: {echo[0] if echo else 'no reply'}"
    return Outcome(name, ok, detail)


def leader_failover(ev: Evidence) -> Outcome:
    name = "leader killed mid-ladder: the survivor goes on"
    f = ev.failover
    if f is None or f.survivor is None:
        what = "never killed" if f is None else f"killed, and no replica took over from {f.killed}"
        return Outcome(name, False, f"the leader was {what}")
    records = [
        r
        for r in shared_episodes(ev.kube.kube)
        if (r.workload.namespace, r.workload.name) == (NOTEBOOK.namespace, NOTEBOOK.name)
    ]
    reclaim = next((m for r in records if (m := r.done(LadderStep.RECLAIM))), None)
    notes, reclaims = (
        ev.ledger.find(NOTEBOOK.ref, "notify"),
        ev.ledger.find(NOTEBOOK.ref, "reclaim"),
    )
    if reclaim is None or f.due is None:
        return Outcome(name, False, f"{f.survivor} took over, but the notebook was not reclaimed")
    late = reclaim.at - f.due
    ok = (
        len(notes) == 1
        and len(reclaims) == 1
        and reclaim.by == f.survivor
        and 0 <= late < RECLAIM_WITHIN_S
    )
    detail = (
        f"{f.killed} killed, {f.survivor} took over in {f.took_over_s or 0:.1f}s and "
        f"reclaimed {late:.1f}s after the due time {f.killed} had set; notify applied "
        f"{len(notes)}x, reclaim {len(reclaims)}x"
    )
    return Outcome(name, ok, detail)


def restored(ev: Evidence) -> Outcome:
    states = ev.kube.ever(NOTEBOOK.namespace, NOTEBOOK.name)
    last = states[-1] if states else None
    zero_seen = any(r == 0 for r, _ in states)
    ok = bool(
        zero_seen
        and last is not None
        and last[0] == NOTEBOOK.replicas
        and ORIGINAL not in last[1]
        and "gpu-guardian.io/restored-at" in last[1]
    )
    detail = f"replicas now {last[0] if last else '?'} (original {NOTEBOOK.replicas})"
    if ev.restore_output:
        detail += f"; guardian restore said: {ev.restore_output.strip().splitlines()[-1]}"
    return Outcome("restore brings back the exact replicas", ok, detail)


CHECKS: tuple[Callable[[Evidence], Outcome], ...] = (
    notebook_notified,
    notebook_annotated,
    notebook_reclaimed,
    training_untouched,
    inference_notify_only,
    shared_idle_pod_notified,
    unlabelled_pod_grouped,
    dead_exporter,
    slack_threads,
    evidence_pictures,
    kept_from_slack,
    leader_failover,
    restored,
)


def check_all(ev: Evidence) -> list[Outcome]:
    return [check(ev) for check in CHECKS]
