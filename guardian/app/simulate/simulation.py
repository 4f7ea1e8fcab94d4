"""``guardian simulate``: wire the passes together and collect what they found.

1. The rule pack's alert timeline over ``[since, until]`` (alert_timeline.py).
2. The workloads of the alerts' pods: from the cluster, or guessed from the series.
3. The remediation loop replayed over that timeline with the real planner and the
   policies (every one as if enforcing), each workload judged on the pods it had at the
   time, read from the allocation history (reclaimed_usage.py); each would-be reclaim
   is checked against the workload's own later usage: when it got busy again, what it
   held until then, and whether that was within the regret horizon. A workload only
   partly idle is not reclaimed, as the controller does not reclaim it: what a
   right-size of its idle part would have freed is counted instead.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from guardian.adapters.kube.credentials import KubeCredentials, api_access, load_api_client
from guardian.adapters.kube.reader import KubeReader
from guardian.adapters.kube.rest import KubeRest
from guardian.adapters.prometheus import PrometheusQuerier
from guardian.app.history.detect import detect_profile
from guardian.app.history.fetch import MAX_POINTS, RangeFetcher
from guardian.app.history.progress import NoProgress, Progress
from guardian.app.remediation.build import pipeline_group_names, rule_windows
from guardian.app.remediation.policy_files import load_policies
from guardian.app.rules.build import compile_groups
from guardian.app.settings.config_file import Settings
from guardian.app.simulate.alert_timeline import Timeline, TimelineBuilder, TimelineRequest
from guardian.app.simulate.reclaimed_usage import UsageCache, UsageQuery, lookback_pad
from guardian.app.simulate.workloads import Workloads, from_cluster, from_series
from guardian.engine.remediation import PlannerSettings, is_pipeline
from guardian.engine.report.profiles import MetricProfile
from guardian.engine.rules.compiled import TemplateEnv
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.simulate.ladder_replay import (
    HOLD_PREFIX,
    LadderReplay,
    RestoreTimes,
    replay_ladder,
)
from guardian.engine.simulate.partial_outcomes import PartlyIdle, right_sizes
from guardian.engine.simulate.reclaim_outcomes import (
    HoldSpan,
    ReclaimOutcome,
    hold_spans,
    reclaim_outcome,
)
from guardian.engine.simulate.replay_records import ReplayLog, ReplaySources, WouldStep
from guardian.model.alerts import TransitionKind
from guardian.model.history import TimeRange
from guardian.model.policies import ReclaimPolicy
from guardian.model.remediation_events import LadderStep

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimulateOptions:
    since: float
    until: float
    step: float | None = None  # None: each group's own interval
    horizon: float = 86400.0  # busy again within this after a reclaim: regret
    busy_threshold: float = 0.05
    chunk_seconds: float = 86400.0
    policy_files: tuple[str, ...] | None = None  # None: the config's remediation.policy_files
    from_cluster: bool = False
    # With --from-cluster: where credentials come from (the CLI's flags and environment);
    # None: the config's remediation.kubeconfig/kube_context, else in-cluster.
    credentials: KubeCredentials | None = None
    metrics: str = "auto"  # auto | guardian | dcgm


@dataclass
class SimulationResult:
    span: TimeRange
    groups: int
    rules: int
    queries: int
    instant_rules: tuple[str, ...]
    workloads_source: str
    metrics: str
    policies: list[tuple[str, str, str]]  # name, mode in its file, source
    fired: Counter[str]
    steps: list[WouldStep]
    reclaims: list[ReclaimOutcome]
    holds: list[HoldSpan]  # pipeline health held a workload's ladder
    global_holds: list[HoldSpan]  # pipeline health held every action in a cluster
    refusals: list[HoldSpan]  # other guards that said no (exclusions, limits, ...)
    currency: str
    horizon: float
    elapsed: float = 0.0
    restores: list[tuple[float, str]] = field(default_factory=list)
    partly_idle: list[PartlyIdle] = field(default_factory=list)  # held: only part was idle

    @property
    def notifications(self) -> list[WouldStep]:
        return [s for s in self.steps if s.step is LadderStep.NOTIFY]


@dataclass(frozen=True)
class Clients:
    """What the simulation talks to; tests and the demo pass their own."""

    querier: PrometheusQuerier
    api_client: Any = None  # a kubernetes ApiClient, for --from-cluster


class Simulation:
    def __init__(
        self,
        settings: Settings,
        options: SimulateOptions,
        clients: Clients,
        *,
        progress: Progress | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self.options = options
        self.clients = clients
        self.progress = progress or NoProgress()
        self.monotonic = monotonic
        self.fetcher = RangeFetcher(clients.querier)

    def run(self) -> SimulationResult:
        started = self.monotonic()
        opts = self.options
        groups = compile_groups(self.settings)
        if opts.step is not None:
            groups = [dataclasses.replace(g, interval_seconds=opts.step) for g in groups]
        span = TimeRange(opts.since, opts.until, min(g.interval_seconds for g in groups))
        env = TemplateEnv(self.settings.external_labels, self.settings.external_url)
        request = TimelineRequest(groups, span, env, opts.chunk_seconds)
        timeline = TimelineBuilder(
            request, self.fetcher, self.clients.querier.query, self.progress
        ).build()
        policies = load_policies(
            list(opts.policy_files)
            if opts.policy_files is not None
            else self.settings.remediation.policy_files
        )
        workloads = self._workloads(timeline)
        profile = detect_profile(self.clients.querier, span, opts.metrics)
        prices = self.settings.prices.table()
        windows = rule_windows(groups)
        usage = self._usage(span, profile, lookback_pad(windows, span.step), workloads)
        sources = ReplaySources(windows, usage)
        log = self._replay(timeline, policies, workloads, groups, sources, usage)
        reclaims = [
            reclaim_outcome(s, usage.usages[s.workload], span.end, opts.horizon, prices)
            for s in log.steps
            if s.step is LadderStep.RECLAIM
        ]
        spans = hold_spans(log.holds, log.cycles, "")
        held = [s for s in spans if s.reason.startswith(HOLD_PREFIX)]
        return SimulationResult(
            span=span,
            groups=len(groups),
            rules=sum(len(g.rules) for g in groups),
            queries=self.fetcher.queries,
            instant_rules=timeline.instant_rules,
            workloads_source=workloads.source,
            metrics=profile.name,
            policies=[(p.name, p.spec.mode.value, p.source) for p in policies],
            fired=Counter(
                t.alertname for t in timeline.transitions if t.kind is TransitionKind.FIRING
            ),
            steps=log.steps,
            reclaims=reclaims,
            holds=[s for s in held if s.workload is not None],
            global_holds=[s for s in held if s.workload is None],
            refusals=[s for s in spans if not s.reason.startswith(HOLD_PREFIX)],
            currency=prices.currency,
            horizon=opts.horizon,
            elapsed=self.monotonic() - started,
            restores=[(at, str(ref)) for at, ref in log.restores],
            partly_idle=right_sizes(log.partly, usage.usages, log.steps, span.end, prices),
        )

    def _usage(
        self, span: TimeRange, profile: MetricProfile, pad: float, workloads: Workloads
    ) -> UsageCache:
        """The workloads' pods and usage, read as the replay asks for them."""
        opts = self.options
        owners = {
            key: owner.root
            for key, owner in workloads.snapshot.pod_owners.items()
            if owner.root is not None
        }
        return UsageCache(
            UsageQuery(
                self.clients.querier,
                self.fetcher,
                profile,
                TimeRange(span.start, span.end, span.step),
                opts.busy_threshold,
                max(opts.chunk_seconds, MAX_POINTS * span.step),
                pad,
                owners,
            )
        )

    def _workloads(self, timeline: Timeline) -> Workloads:
        pods = {
            (t.labels["namespace"], t.labels["pod"])
            for t in timeline.transitions
            if t.kind is TransitionKind.FIRING
            and not is_pipeline(t.labels)
            and t.labels.get("namespace")
            and t.labels.get("pod")
        }
        namespace = self.settings.remediation.controller_namespace
        if not self.options.from_cluster:
            return from_series(pods, namespace)
        api = self.clients.api_client
        if api is None:
            remediation = self.settings.remediation
            credentials = self.options.credentials or KubeCredentials(
                remediation.kubeconfig, remediation.kube_context
            )
            api = load_api_client(credentials)
        rest = KubeRest(api, timeout=self.settings.remediation.api_timeout)
        with api_access(api):
            return from_cluster(KubeReader(rest), pods, namespace)

    def _replay(
        self,
        timeline: Timeline,
        policies: Sequence[ReclaimPolicy],
        workloads: Workloads,
        groups: Sequence[CompiledGroup],
        sources: ReplaySources,
        restore_times: RestoreTimes,
    ) -> ReplayLog:
        r = self.settings.remediation
        planner = PlannerSettings(
            max_actions_per_cycle=r.max_actions_per_cycle,
            max_health_age=r.max_health_age,
            pipeline_groups=pipeline_group_names(groups),
        )
        replay = LadderReplay(
            policies,
            workloads.snapshot,
            planner,
            cycle_interval=r.cycle_interval,
            sources=sources,
        )
        return replay_ladder(replay, timeline.evaluations, restore_times)
