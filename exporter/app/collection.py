"""The collection loop: NVML (or the simulator) in a worker with a timeout, attribution, snapshot.

NVML init failure or a lifecycle error never ends the loop: it publishes ``nvml_up 0`` and
re-initialises with exponential backoff. A call that hangs is abandoned: the last good snapshot
is served marked stale, and no new call starts until the hung one returns.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from exporter.app.metrics import RenderedSnapshot, RenderTimer
from exporter.engine.cgroup import parse_cgroup_file
from exporter.engine.snapshot_builder import BuilderState, SnapshotSetup, build_snapshot
from exporter.model.attribution import NO_POD, CgroupIdentity
from exporter.model.backend import CgroupReader, GpuBackend
from exporter.model.enrichment import Enrichment
from exporter.model.errors import BackendUnavailable
from exporter.model.readings import NodeReading
from exporter.model.snapshot import ErrorCount, ExporterHealth, Snapshot, empty_snapshot

logger = logging.getLogger(__name__)

T = TypeVar("T")
_PARSE_CACHE_MAX = 8192
REFRESH_CYCLES = 12


class CallTimeout(Exception):
    """The backend call did not return in time (or an earlier one is still hung)."""


class _Worker:
    """Runs one backend call at a time in a daemon thread, abandoning it after a timeout."""

    def __init__(self) -> None:
        self._hung: threading.Thread | None = None

    @property
    def busy(self) -> bool:
        return self._hung is not None and self._hung.is_alive()

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        if self.busy:
            raise CallTimeout("an earlier backend call is still running")
        result: list[T] = []
        error: list[BaseException] = []

        def run() -> None:
            try:
                result.append(fn())
            except BaseException as exc:  # handed to the caller's thread
                error.append(exc)

        thread = threading.Thread(target=run, name="guardian-exporter-nvml", daemon=True)
        thread.start()
        thread.join(timeout)
        if thread.is_alive():
            self._hung = thread
            raise CallTimeout(f"backend call still running after {timeout:g} s")
        self._hung = None
        if error:
            raise error[0]
        return result[0]


class SnapshotStore:
    """The current rendered snapshot; replaced whole, read without locks."""

    def __init__(self) -> None:
        self.current: RenderedSnapshot | None = None
        self.ready = threading.Event()

    def publish(self, rendered: RenderedSnapshot) -> None:
        self.current = rendered
        self.ready.set()


@dataclass(frozen=True)
class NodeSources:
    """Where a collection reads from: the GPUs and the processes' cgroup files."""

    backend: GpuBackend
    cgroups: CgroupReader


@dataclass(frozen=True)
class CollectionTiming:
    """A cycle every ``interval`` seconds; a backend call is abandoned after ``timeout``;
    re-initialisation backs off from ``interval`` up to ``backoff_max``."""

    interval: float
    timeout: float
    backoff_max: float
    clock: Callable[[], float] = time.time


class CollectionLoop:
    def __init__(
        self,
        sources: NodeSources,
        store: SnapshotStore,
        setup: SnapshotSetup,
        timing: CollectionTiming,
        *,
        render_timer: RenderTimer | None = None,
        enricher: Callable[[Snapshot], Enrichment] | None = None,
    ) -> None:
        self._backend = sources.backend
        self._cgroups = sources.cgroups
        self._store = store
        self._setup = setup
        self._interval = timing.interval
        self._timeout = timing.timeout
        self._backoff_max = timing.backoff_max
        self._clock = timing.clock
        self._timer = render_timer or RenderTimer()
        self._enricher = enricher
        self._worker = _Worker()
        self._up = False
        self._next_init = 0.0
        self._backoff = timing.interval
        self._state = BuilderState()
        self._errors: dict[tuple[str, str], int] = {}
        self._stages: dict[str, float] = {}
        self._last_success: float | None = None
        self._last_good: Snapshot | None = None
        self._parsed: dict[str, CgroupIdentity] = {}
        self._identities: dict[int, CgroupIdentity] = {}
        self._unread: set[int] = set()
        self._cycle = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ----------------------------------------------------------------- loop
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="guardian-exporter-collector")
        self._thread.daemon = True
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if not self._worker.busy:
            self._backend.close()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        next_run = time.monotonic()
        while not self._stop.is_set():
            try:
                self.run_cycle()
            except Exception:  # the loop edge: one bad cycle must not end collection
                logger.exception("collection cycle failed")
                self._count("collect", "exception")
            next_run += self._interval
            delay = next_run - time.monotonic()
            if delay < 0:  # fell behind (a hung call): restart the schedule from now
                next_run, delay = time.monotonic(), 0.0
            self._stop.wait(delay)

    # ----------------------------------------------------------------- one cycle
    def run_cycle(self) -> Snapshot:
        now = self._clock()
        if not self._up:
            if now < self._next_init:
                return self._publish_down(now)
            try:
                self._worker.call(self._backend.open, self._timeout)
            except (BackendUnavailable, CallTimeout) as exc:
                return self._went_down(now, exc)
            logger.info("%s backend initialised", self._backend.name)
            self._up = True
            self._backoff = self._interval
        started = time.perf_counter()
        try:
            reading = self._worker.call(self._backend.read, self._timeout)
        except CallTimeout as exc:
            return self._stale(now, exc)
        except BackendUnavailable as exc:
            return self._went_down(now, exc)
        self._stages["nvml"] = time.perf_counter() - started
        for err in reading.errors:
            self._count(err.op, err.kind)
        started = time.perf_counter()
        identities = self._attribute(reading)
        self._stages["attribution"] = time.perf_counter() - started
        self._last_success = now
        snapshot, self._state = build_snapshot(
            reading,
            identities,
            self._state,
            self._setup,
            taken_at=now,
            health=self._health(up=True),
        )
        if self._enricher is not None:
            snapshot = self._enrich(self._enricher, snapshot)
        self._last_good = snapshot
        self._store.publish(RenderedSnapshot(snapshot, self._timer))
        return snapshot

    def _enrich(self, enricher: Callable[[Snapshot], Enrichment], snapshot: Snapshot) -> Snapshot:
        # Counted as attribution: it attributes the same series to named pods.
        started = time.perf_counter()
        try:
            enriched = snapshot.with_enrichment(enricher(snapshot))
        except Exception:  # per item: a Kubernetes failure must not cost the GPU series
            logger.exception("Kubernetes enrichment failed; serving pod_uid-only series")
            self._count("kubernetes", "exception")
            return snapshot
        self._stages["attribution"] = (
            self._stages.get("attribution", 0.0) + time.perf_counter() - started
        )
        return enriched

    def _attribute(self, reading: NodeReading) -> dict[int, CgroupIdentity]:
        """Each GPU process's pod.

        A PID's pod is remembered while the PID stays on a GPU, and its cgroup file is read
        again every REFRESH_CYCLES cycles (staggered by PID). A new process could only reuse
        the PID after the kernel handed out every other PID, within one interval.
        """
        self._cycle += 1
        out: dict[int, CgroupIdentity] = {}
        cache = self._identities
        for dev in reading.devices:
            for proc in dev.processes:
                pid = proc.pid
                if pid in out:
                    continue
                ident = cache.get(pid)
                if ident is None or (pid + self._cycle) % REFRESH_CYCLES == 0:
                    ident = self._identity(pid)
                out[pid] = ident
        # Forget PIDs that left the GPUs, and those that could not be read (read again).
        self._identities = {pid: i for pid, i in out.items() if pid not in self._unread}
        self._unread.clear()
        return out

    def _identity(self, pid: int) -> CgroupIdentity:
        text = self._cgroups.read_cgroup(pid)
        if text is None:
            self._unread.add(pid)
            return NO_POD  # gone already: its memory still counts, unattributed
        ident = self._parsed.get(text)
        if ident is None:
            if len(self._parsed) >= _PARSE_CACHE_MAX:
                self._parsed.clear()
            ident = self._parsed[text] = parse_cgroup_file(text)
        return ident

    # ----------------------------------------------------------------- failures
    def _count(self, op: str, kind: str) -> None:
        self._errors[(op, kind)] = self._errors.get((op, kind), 0) + 1

    def _health(self, *, up: bool, stale: bool = False) -> ExporterHealth:
        self._stages["render"] = self._timer.last_seconds
        return ExporterHealth(
            nvml_up=up,
            last_success_timestamp_seconds=self._last_success,
            stage_seconds=tuple(
                (s, self._stages[s]) for s in ("nvml", "attribution", "render") if s in self._stages
            ),
            errors=tuple(ErrorCount(op, kind, n) for (op, kind), n in sorted(self._errors.items())),
            stale=stale,
        )

    def _went_down(self, now: float, exc: BackendUnavailable | CallTimeout) -> Snapshot:
        op, kind = (
            (exc.op, exc.kind) if isinstance(exc, BackendUnavailable) else ("init", "timeout")
        )
        self._count(op, kind)
        self._up = False
        if not self._worker.busy:  # never shut NVML down under a call that is still inside it
            self._backend.close()
        self._next_init = now + self._backoff
        logger.warning(
            "%s backend down (%s); retrying in %.0f s", self._backend.name, exc, self._backoff
        )
        self._backoff = min(self._backoff * 2, self._backoff_max)
        self._state = BuilderState()  # counters restart; never integrate across the outage
        self._last_good = None
        return self._publish_down(now)

    def _publish_down(self, now: float) -> Snapshot:
        snapshot = empty_snapshot(
            self._setup.node, self._health(up=False), now, self._setup.cluster
        )
        self._store.publish(RenderedSnapshot(snapshot, self._timer))
        return snapshot

    def _stale(self, now: float, exc: CallTimeout) -> Snapshot:
        self._count("read", "timeout")
        logger.warning(
            "%s backend: %s; serving the last snapshot as stale", self._backend.name, exc
        )
        health = self._health(up=self._up, stale=True)
        if self._last_good is None:
            snapshot = empty_snapshot(self._setup.node, health, now, self._setup.cluster)
        else:
            snapshot = self._last_good.with_health(health)
        self._store.publish(RenderedSnapshot(snapshot, self._timer))
        return snapshot
