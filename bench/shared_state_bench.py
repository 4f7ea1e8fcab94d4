"""Shared episode state: writes, objects and bytes per 1,000 active episodes (issue #15).

Drives N episodes (default 1,000) through the whole enforcing ladder as the leader does,
with the real EpisodeJournal and EpisodeStore against the fake Kubernetes API (the real
REST protocol, the real client): claim and settle notify, hand the Slack parent over
(a real packed finding), claim and settle annotate, record the grace deadline, claim
and settle reclaim; then restore half of them and close the rest. Counts the API
server's requests and reads the shards' sizes from it.

Prints, in one run:
- writes (create + update) per episode, and in total for the N episodes;
- the write rate those N episodes cause over their life, for a given life span
  (default 1.5 h: a 30 m idle window, a 1 h grace period), against the ~3,000 writes/s
  a single default API server handles (etcd's guidance for small objects);
- the objects used (a fixed number of shards) and the largest shard in bytes with all
  N episodes live, against the 1 MiB a ConfigMap may hold;
- reads: one GET per shard when a replica becomes leader or answers a status.

    .venv/bin/python bench/shared_state_bench.py [--episodes 1000] [--shards 16] [--life-hours 1.5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from kubernetes import config

from guardian.adapters.kube.episode_store import MAX_SHARD_BYTES, EpisodeStore
from guardian.adapters.kube.rest import KubeRest
from guardian.app.notify.thread_handover import pack_finding
from guardian.app.remediation.journal import EpisodeJournal
from guardian.engine.notify.findings import AlertFacts, FindingRules, new_finding
from guardian.model.labels import LabelSet
from guardian.model.notifications import OwnerContext
from guardian.model.reclaim import PlannedAction, Wait
from guardian.model.remediation_events import LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import EpisodeState, SlackParent
from testbed.kubeapi import FakeKubeAPI

NS = "gpu-guardian"
T0 = 1_764_000_000.0
API_SERVER_WRITES_PER_S = 3000.0


def labels(i: int) -> LabelSet:
    """An idle alert as the shipped pack labels it on a real fleet."""
    return LabelSet(
        {
            "alertname": "GpuIdle",
            "cluster": "prod-eu-west-1",
            "container": "trainer",
            "gpu": str(i % 8),
            "gpu_group": "research-a100-80g",
            "guardian_class": "reclaimable",
            "namespace": f"team-{i % 40:02d}",
            "node": f"gpu-node-{i // 8:04d}",
            "pod": f"train-llm-{i:05d}-7f9c8d6b5-x2k4p",
            "severity": "warning",
            "uuid": f"GPU-{i:08x}-1c2d-4e5f-8a9b-0c1d2e3f4a5b",
        }
    )


def parent(i: int, episode: str, lbls: LabelSet) -> SlackParent:
    annotations = LabelSet(
        {
            "summary": "An allocated GPU has been idle for the whole idle window.",
            "description": f"Pod {lbls['namespace']}/{lbls['pod']} holds GPU {lbls['gpu']} "
            f"({lbls['uuid']}) on node {lbls['node']}, but its peak utilization over the "
            "last 30m was 0.4%, under the 5% noise floor.",
            "runbook_url": "https://gpu-guardian.io/runbooks/gpuidle",
        }
    )
    ref = WorkloadRef("apps/v1", "Deployment", lbls["namespace"], f"train-llm-{i:05d}")
    finding = new_finding(
        AlertFacts(lbls, annotations, 0.004, T0),
        T0 + 60,
        FindingRules(),
        OwnerContext(workload=ref),
    )
    return SlackParent(
        f"episode:{finding.episode}",
        "C0GPUALERTS",
        "C0GPUALERTS",
        f"{T0 + i:.6f}",
        finding.episode,
        pack_finding(finding),
    )


def action(i: int, step: LadderStep, lbls: LabelSet, **extra: Any) -> PlannedAction:
    ref = WorkloadRef("apps/v1", "Deployment", lbls["namespace"], f"train-llm-{i:05d}")
    return PlannedAction(ref, step, "reclaim-idle", f"{i:016x}", "idle", False, lbls, **extra)


def ladder(journal: EpisodeJournal, i: int, now: float) -> None:
    lbls = labels(i)
    due = now + 3600
    notify = action(i, LadderStep.NOTIFY, lbls, next_step=LadderStep.ANNOTATE, next_step_due=due)
    journal.claim(notify, now - 1800, now)
    journal.settle(notify, StepOutcome.APPLIED, now)
    journal.publish_parent(notify.episode, parent(i, notify.episode, lbls), now + 1)
    annotate = action(i, LadderStep.ANNOTATE, lbls, next_step=LadderStep.RECLAIM, next_step_due=due)
    journal.claim(annotate, now - 1800, now + 60)
    journal.settle(annotate, StepOutcome.APPLIED, now + 60)
    wait = Wait(annotate.workload, f"grace period: reclaim due at {due}", "reclaim-idle",
                notify.episode, lbls, False, LadderStep.RECLAIM, due)  # fmt: skip
    journal.note_planned(wait, now + 120)


def reclaim(journal: EpisodeJournal, i: int, now: float) -> None:
    step = action(i, LadderStep.RECLAIM, labels(i))
    journal.claim(step, now, now)
    journal.settle(step, StepOutcome.APPLIED, now, original_replicas=2)


def writes(kube: FakeKubeAPI) -> int:
    return len([r for r in kube.requests(path="configmaps") if r.verb in ("create", "update")])


def shard_bytes(kube: FakeKubeAPI) -> list[int]:
    return sorted(
        sum(len(v.encode()) for v in (cm.get("data") or {}).values())
        for cm in kube.objects("ConfigMap", NS)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--life-hours", type=float, default=1.5)
    args = parser.parse_args()
    n = args.episodes
    with (
        FakeKubeAPI.start(namespaces=("default", NS)) as kube,
        tempfile.TemporaryDirectory() as tmp,
    ):
        kubeconfig = kube.write_kubeconfig(Path(tmp) / "kubeconfig")
        api_client = config.new_client_from_config(config_file=str(kubeconfig))
        try:
            store = EpisodeStore(KubeRest(api_client), NS, shards=args.shards)
            journal = EpisodeJournal(store, "bench-0")
            journal.refresh()
            started = time.perf_counter()
            for i in range(n):
                ladder(journal, i, T0 + i)
            live_writes = writes(kube)
            for i in range(n):
                reclaim(journal, i, T0 + 3600 + i)
            sizes = shard_bytes(kube)
            for i in range(n):  # half restored, half closed: each ends its record
                episode = f"{i:016x}"
                state = EpisodeState.RESTORED if i % 2 else EpisodeState.CLOSED
                journal.end(episode, state, T0 + 7200 + i)
            elapsed = time.perf_counter() - started
            total = writes(kube)
            kube.clear_requests()
            EpisodeJournal(
                EpisodeStore(KubeRest(api_client), NS, shards=args.shards), "b"
            ).refresh()
            reads = len(kube.requests(verb="get"))
        finally:
            api_client.close()
    per_episode = total / n
    life_s = args.life_hours * 3600
    rate = total / life_s  # n episodes live at once, each over its life
    print(f"episodes: {n}, shards: {args.shards} ConfigMaps (the object count, fixed)")
    print(f"writes to the ladder's grace period: {live_writes} ({live_writes / n:.1f} per episode)")
    print(f"writes over the whole ladder: {total} ({per_episode:.1f} per episode)")
    print(
        f"write rate for {n} live episodes living {args.life_hours:g} h: {rate:.2f}/s "
        f"({rate * 60:.0f}/min); {rate / API_SERVER_WRITES_PER_S:.4%} of ~3,000 writes/s"
    )
    print(
        f"largest shard with all {n} reclaimed: {sizes[-1]:,} bytes "
        f"({sizes[-1] / MAX_SHARD_BYTES:.0%} of the {MAX_SHARD_BYTES:,}-byte limit); "
        f"all shards: {sum(sizes):,} bytes ({sum(sizes) / n:.0f} per episode)"
    )
    print(f"reads when a replica becomes leader: {reads} GETs")
    print(f"(the run took {elapsed:.1f}s in this process)")


if __name__ == "__main__":
    main()
