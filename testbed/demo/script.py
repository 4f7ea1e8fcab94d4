"""The demo's story, driven by what actually happens (never by fixed sleeps):

1. wait for Prometheus's first scrape of the three exporters;
2. watch the idle notebook go through notify → annotate → grace → reclaim; once it is
   annotated (and its Slack parent handed over), kill the leading ``guardian run`` with
   SIGKILL: the other replica takes the Lease over and goes on from the shared episode
   state (the reclaim at its due time, in the same Slack thread); the killed replica is
   started again, as its Deployment would;
3. once it is reclaimed and the node2 sweep's owner was notified (its reclaim now due a
   grace period later), kill node2's exporter;
   As soon as the sweep's Slack parent shows its buttons, the on-call engineer presses
   *Keep 4h* on it (with the fake Slack): the sweep gets ``snooze-until``, the parent
   says who kept it until when, and so does its thread;
4. once a pipeline alert fires for it, restore the notebook with ``guardian restore``;
5. finish when the notebook runs again, the inference pod's memory alert and the shared
   GPU's idle-share alert have fired, and Slack has been quiet for a moment; or give up at
   the deadline.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from guardian.model.remediation_events import LadderStep
from guardian.model.shared_episode import SharedEpisode
from guardian.model.times import rfc3339
from testbed.demo import config as cfg
from testbed.demo.fleet import (
    CHAT,
    DOOMED_NODE,
    INFERENCE,
    NODES,
    NOTEBOOK,
    SHARED_NOTEBOOK,
    SWEEP,
    TRAINING,
    UNLABELLED,
)
from testbed.demo.observers import (
    AlertObserver,
    Event,
    KubeObserver,
    LedgerObserver,
    SlackObserver,
    prometheus_query,
    shared_episodes,
)
from testbed.demo.outcomes import Evidence, Failover, slack_posted
from testbed.demo.stack import DemoStack, need
from testbed.demo.timeline import Timeline

logger = logging.getLogger(__name__)

TICK_S = 0.5
QUIET_S = 4.0  # Slack silent this long at the end: the outbox has drained
SWEEP_WAIT_S = 20.0  # after the reclaim, how long the kill waits for the sweep's notice


class DemoAborted(Exception):
    """A process the demo needs exited early."""


@dataclass
class DemoScript:
    stack: DemoStack
    timeline: Timeline
    deadline: float  # monotonic
    monotonic: Callable[[], float] = time.monotonic
    evidence: Evidence = field(init=False)
    slack_obs: SlackObserver | None = None
    _first_scrape: bool = False
    _reclaimed_at: float | None = None
    _restored: bool = False
    _last_event: float = 0.0

    def __post_init__(self) -> None:
        s = self.stack
        self.prometheus = need(s.prometheus, "Prometheus")
        self.cluster = need(s.cluster, "the fake API")
        self.procs = need(s.procs, "the process group")
        self.replicas = need(s.replicas, "the controllers")
        self.kubeconfig = need(s.kubeconfig, "the fake API")
        self.alerts = AlertObserver(self._replica_urls)
        self.ledger = LedgerObserver(
            [self.replicas.state_dir(n) / "state.db" for n in self.replicas.specs]
        )
        watched = (TRAINING, NOTEBOOK, INFERENCE, SWEEP, CHAT, SHARED_NOTEBOOK)
        deployments = [(w.namespace, w.name) for w in watched]
        self.kube = KubeObserver(self.cluster.kube, deployments)
        if s.slack is not None:
            self.slack_obs = SlackObserver(s.slack, s.channel)
        self.evidence = Evidence(
            alerts=self.alerts,
            ledger=self.ledger,
            kube=self.kube,
            slack=s.slack,
            channel=s.channel,
            doomed_instance=s.exporter_instance(DOOMED_NODE),
        )

    # ------------------------------------------------------------ the loop
    def run(self) -> bool:
        """True when the story reached its end before the deadline."""
        self._last_event = self.monotonic()
        try:
            while self.monotonic() < self.deadline:
                self._tick()
                if self._finished():
                    return True
                time.sleep(TICK_S)
            self.timeline.event("demo", "deadline reached before the story ended")
            return False
        finally:
            self.ledger.close()

    def _emit(self, events: list[Event]) -> None:
        for source, text, detail in events:
            self.timeline.event(source, text, detail)
            self._last_event = self.monotonic()

    def _say(self, source: str, text: str, detail: list[str] | None = None) -> None:
        self._emit([(source, text, detail or [])])

    def _tick(self) -> None:
        self._check_alive()
        if not self._first_scrape:
            self._await_first_scrape()
        self._emit(self.alerts.poll())
        self._emit(self.ledger.poll())
        self._emit(self.kube.poll())
        if self.slack_obs is not None:
            self._emit(self.slack_obs.poll())
        self._controller()
        self._unassigned()
        self._maybe_failover()
        self._maybe_takeover()
        self._maybe_kill()
        self._maybe_press_keep()
        self._maybe_restore()

    def _replica_urls(self) -> list[str]:
        """Running replicas, the leader first."""
        leader = self.replicas.leader()
        running = sorted(self.replicas.running(), key=lambda n: n != leader)
        return [self.replicas.url(n) for n in running]

    def _check_alive(self) -> None:
        s = self.stack
        required = [
            c for n, c in s.exporters.items() if n != DOOMED_NODE or not self.evidence.killed
        ]
        down = self.evidence.failover
        required += [
            c
            for n, c in self.replicas.children.items()
            if down is None or n != down.killed or down.restarted
        ]
        for child in required:
            if not child.running():
                raise DemoAborted(f"{child.name} exited early:\n{child.log_tail()}")
        if s.prometheus is not None and not s.prometheus.is_running():
            raise DemoAborted(f"prometheus exited early:\n{s.prometheus.log_tail()}")

    def _await_first_scrape(self) -> None:
        up = prometheus_query(self.prometheus.url, f'up{{job="{cfg.EXPORTER_JOB}"}} == 1')
        if len(up) == len(NODES):
            self._first_scrape = True
            self._say("prometheus", f"first scrape: {len(up)} exporter targets up")

    def _controller(self) -> None:
        self._emit([("kubernetes", change, []) for change in self.cluster.sync()])
        replicas = self.kube.last.get((NOTEBOOK.namespace, NOTEBOOK.name), (1, {}))[0]
        if replicas == 0 and self._reclaimed_at is None:
            self._reclaimed_at = self.monotonic()

    def _unassigned(self) -> None:
        if self.evidence.unassigned_series or not self._first_scrape:
            return
        query = (
            f'{{__name__=~"guardian_pod_.+", namespace="{UNLABELLED.namespace}", '
            f'pod="{UNLABELLED.name}", gpu_group="unassigned"}}'
        )
        found = prometheus_query(self.prometheus.url, query)
        if found:
            self.evidence.unassigned_series = len(found)
            names = sorted({r["metric"]["__name__"] for r in found})
            who = f"{UNLABELLED.namespace}/{UNLABELLED.name}"
            text = f'{who} has no group label: gpu_group="unassigned" on {len(found)} series'
            self._say("prometheus", text, [", ".join(names)])

    def _notebook_record(self) -> SharedEpisode | None:
        for record in shared_episodes(self.cluster.kube):
            w = record.workload
            if record.live and (w.namespace, w.name) == (NOTEBOOK.namespace, NOTEBOOK.name):
                return record
        return None

    def _maybe_failover(self) -> None:
        """Kill the leader in the notebook's grace period, once its Slack parent is shared."""
        if self.evidence.failover is not None or self._reclaimed_at is not None:
            return
        record = self._notebook_record()
        if record is None or record.done(LadderStep.ANNOTATE) is None:
            return
        if self.slack_obs is not None and record.slack is None:
            return
        leader = self.replicas.leader()
        if leader is None or leader not in self.replicas.running():
            return
        pid = self.replicas.children[leader].pid
        self.replicas.kill(leader)
        self.evidence.failover = Failover(leader, self.monotonic(), record.next_step_due)
        due = rfc3339(record.next_step_due) if record.next_step_due else "?"
        self._say(
            "controller",
            f"killed the leader, replica {leader} (pid {pid}, SIGKILL), in the notebook's "
            f"grace period (reclaim due at {due})",
        )

    def _maybe_takeover(self) -> None:
        failover = self.evidence.failover
        if failover is None or failover.restarted:
            return
        leader = self.replicas.leader()
        if leader is None or leader == failover.killed:
            return
        failover.survivor = leader
        failover.took_over_s = self.monotonic() - failover.killed_at
        self._say(
            "controller",
            f"replica {leader} took the Lease over {failover.took_over_s:.1f}s later; it goes "
            "on from the episode state the replicas share",
        )
        child = self.replicas.start(failover.killed)
        failover.restarted = True
        self._say(
            "controller",
            f"replica {failover.killed} started again (pid {child.pid}), as its Deployment "
            "would: a standby, its state directory kept",
        )

    def _maybe_kill(self) -> None:
        if self.evidence.killed or self._reclaimed_at is None:
            return
        sweep_fired = bool(
            self.alerts.ever("GpuIdle", namespace=SWEEP.namespace, workload=SWEEP.name)
        )
        waited = self.monotonic() - self._reclaimed_at
        if not sweep_fired and waited < SWEEP_WAIT_S:
            return
        child = self.stack.exporters[DOOMED_NODE]
        self.procs.kill(child)
        self.evidence.killed = True
        text = f"killed the exporter of {DOOMED_NODE} (pid {child.pid}, SIGKILL)"
        self._say("exporter", text + ": its GPUs go unwatched")

    def _maybe_press_keep(self) -> None:
        """The on-call engineer keeps the sweep for 4 hours from its Slack message."""
        slack = self.stack.slack
        if slack is None or self.evidence.kept_pressed:
            return
        for message in slack.messages(self.stack.channel):
            if SWEEP.name not in message.text:
                continue
            try:
                slack.click(cfg.ONCALL, self.stack.channel, message.ts, "keep_4h")
            except LookupError:
                return  # no buttons yet (the episode is not followed yet)
            self.evidence.kept_pressed = True
            self._say("slack", f"<@{cfg.ONCALL}> presses [ Keep 4h ] on {SWEEP.name}'s message")
            return

    def _pipeline_alert_firing(self) -> bool:
        ev = self.evidence
        return bool(
            self.alerts.ever("GpuExporterDown", instance=ev.doomed_instance)
            or self.alerts.ever("GpuExporterDown", node=DOOMED_NODE)
            or self.alerts.ever("GpuExporterStale", node=DOOMED_NODE)
        )

    def _maybe_restore(self) -> None:
        if self._restored or not self.evidence.killed or not self._pipeline_alert_firing():
            return
        target = f"{NOTEBOOK.namespace}/Deployment/{NOTEBOOK.name}"
        # Its log lines stay in its log file; the timeline shows its answer.
        leader = self.replicas.leader() or next(iter(self.replicas.specs))
        argv = ["guardian", "--log-level", "WARNING", "restore", target]
        argv += ["--config", str(self.replicas.config(leader))]
        argv += ["--kubeconfig", str(self.kubeconfig)]
        self._say("restore", f"$ guardian restore {target} --config guardian.yaml")
        code, output = self.procs.run("guardian-restore", argv, timeout=60)
        self._restored = True
        self.evidence.restore_output = output
        lines = [line for line in output.splitlines() if line.strip()][-3:]
        self._say("restore", f"exit status {code}", lines)

    def _finished(self) -> bool:
        replicas = self.kube.last.get((NOTEBOOK.namespace, NOTEBOOK.name), (0, {}))[0]
        memory = self.alerts.ever(
            "GpuMemoryUnderutilized", namespace=INFERENCE.namespace, workload=INFERENCE.name
        )
        shared = self.alerts.ever(
            "GpuShareIdle", namespace=SHARED_NOTEBOOK.namespace, workload=SHARED_NOTEBOOK.name
        )
        quiet = self.monotonic() - self._last_event >= QUIET_S
        done = self._restored and replicas == NOTEBOOK.replicas
        posted = slack_posted(self.evidence)
        return done and bool(memory) and bool(shared) and posted and quiet
