"""The episodes every replica shares, kept in the cluster: a few ConfigMaps in the
controller's namespace, written only with compare-and-swap.

An episode's record lives in the shard its ID hashes to (``gpu-guardian-state-00`` ..
``-15`` by default), one JSON document per data key. Every write is a PUT carrying the
shard's ``resourceVersion`` as last read (or a create), so two writers can never both
win: the loser gets 409, reads the shard again and decides again on what it finds
(``update``'s ``change`` runs once more). A fixed number of objects, no delete verb:
records of ended episodes are dropped from their shard after ``retention``. Why
ConfigMaps, and their size and write rate: docs/deploy.md, "High availability and state".
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from guardian.adapters.kube.rest import Conflict, KubeRest, NotFound, Obj, object_path
from guardian.model.labels import LabelSet
from guardian.model.remediation_events import HoldKind, LadderStep, StepOutcome, WorkloadRef
from guardian.model.shared_episode import (
    EpisodeState,
    InFlight,
    Outage,
    SharedEpisode,
    SlackParent,
    StepMark,
)
from guardian_common.errors import PermanentError, TransientError

logger = logging.getLogger(__name__)

VERSION = 1
STATE_LABEL = "gpu-guardian.io/state"
DEFAULT_PREFIX = "gpu-guardian-state"
DEFAULT_SHARDS = 16
# The API server refuses a ConfigMap over 1 MiB; stop well before, with a clear error.
MAX_SHARD_BYTES = 900 * 1024
_ATTEMPTS = 4

Change = Callable[[SharedEpisode | None], SharedEpisode | None]


class SharedStateFull(PermanentError):
    """A shard would outgrow a ConfigMap: more shards are needed (docs/deploy.md)."""


# ------------------------------------------------------------------ codec
def _t(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def encode(e: SharedEpisode) -> str:
    """One record as compact JSON; absent fields are left out."""
    w = e.workload
    doc: dict[str, Any] = {
        "v": VERSION,
        "workload": [w.api_version, w.kind, w.namespace, w.name],
        "policy": e.policy,
        "startedAt": _t(e.started_at),
        "state": e.state.value,
        "alert": dict(e.alert_labels.items_sorted),
        "updatedAt": _t(e.updated_at),
        "endedAt": _t(e.ended_at),
        "steps": [[m.step.value, m.outcome.value, _t(m.at), m.by] for m in e.steps],
        "planned": e.planned or None,
        "originalReplicas": e.original_replicas,
    }
    if e.inflight is not None:
        f = e.inflight
        doc["inflight"] = [f.step.value, f.attempt, _t(f.at), f.by]
    if e.next_step is not None:
        doc["next"] = [e.next_step.value, _t(e.next_step_due)]
    if e.hold is not None:
        doc["hold"] = e.hold.value
    if e.outage is not None:
        doc["outage"] = [_t(e.outage.since), _t(e.outage.resumed_at)]
    if e.slack is not None:
        s = e.slack
        doc["slack"] = {
            "thread": s.thread,
            "channel": s.channel,
            "channelId": s.channel_id,
            "ts": s.ts,
            "alertEpisode": s.alert_episode,
            "finding": dict(s.finding),
        }
    return json.dumps({k: v for k, v in doc.items() if v not in (None, [])}, separators=(",", ":"))


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _hold(value: Any) -> HoldKind | None:
    """A hold kind this version knows; a newer one's unknown kind reads as none."""
    return HoldKind(value) if value in HoldKind.__members__.values() else None


def decode(episode: str, text: str) -> SharedEpisode:
    """Raises ValueError (or KeyError, TypeError) on a record it cannot read."""
    d = json.loads(text)
    if d.get("v") != VERSION:
        raise ValueError(f"record version {d.get('v')!r}, this controller reads {VERSION}")
    inflight, nxt, slack = d.get("inflight"), d.get("next"), d.get("slack")
    outage = d.get("outage")
    return SharedEpisode(
        episode=episode,
        workload=WorkloadRef(*(str(x) for x in d["workload"])),
        policy=str(d["policy"]),
        started_at=float(d["startedAt"]),
        state=EpisodeState(d["state"]),
        alert_labels=LabelSet({str(k): str(v) for k, v in d.get("alert", {}).items()}),
        updated_at=float(d["updatedAt"]),
        ended_at=None if d.get("endedAt") is None else float(d["endedAt"]),
        steps=tuple(
            StepMark(LadderStep(s), StepOutcome(o), float(at), str(by))
            for s, o, at, by in d.get("steps", [])
        ),
        inflight=None
        if inflight is None
        else InFlight(LadderStep(inflight[0]), int(inflight[1]), float(inflight[2]), inflight[3]),
        next_step=None if nxt is None else LadderStep(nxt[0]),
        next_step_due=None if nxt is None or nxt[1] is None else float(nxt[1]),
        planned=str(d.get("planned") or ""),
        hold=_hold(d.get("hold")),
        outage=None if outage is None else Outage(float(outage[0]), _float(outage[1])),
        original_replicas=d.get("originalReplicas"),
        slack=None
        if slack is None
        else SlackParent(
            thread=str(slack["thread"]),
            channel=str(slack["channel"]),
            channel_id=slack.get("channelId"),
            ts=str(slack["ts"]),
            alert_episode=str(slack["alertEpisode"]),
            finding=dict(slack.get("finding") or {}),
        ),
    )


# ------------------------------------------------------------------ the store
@dataclass
class _Shard:
    name: str
    version: str | None = None  # None: the ConfigMap does not exist yet
    raw: dict[str, str] = field(default_factory=dict)  # data as read (or as we wrote it)
    records: dict[str, SharedEpisode] = field(default_factory=dict)  # what we could decode


def _shard_from(name: str, obj: Obj | None) -> _Shard:
    if obj is None:
        return _Shard(name)
    raw = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
    records: dict[str, SharedEpisode] = {}
    for key, text in raw.items():
        try:
            records[key] = decode(key, text)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # Kept as it is (a newer controller's record); never acted on.
            logger.warning(
                "shared state: record %s in %s unreadable, kept as is: %s", key, name, exc
            )
    return _Shard(name, str(obj["metadata"]["resourceVersion"]), raw, records)


class EpisodeStore:
    """Shared records, cached as last read or written. ``load`` reads every shard; writes
    go through ``update``. Thread-safe: the loop and the notifier's worker both write."""

    def __init__(
        self,
        rest: KubeRest,
        namespace: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        shards: int = DEFAULT_SHARDS,
        retention: float = 7200.0,
        max_bytes: int = MAX_SHARD_BYTES,
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.prefix = prefix
        self.shards = shards
        self.retention = retention
        self.max_bytes = max_bytes
        self._cache: dict[str, _Shard] = {}
        self._lock = threading.RLock()

    def shard_names(self) -> list[str]:
        return [f"{self.prefix}-{i:02d}" for i in range(self.shards)]

    def shard_of(self, episode: str) -> str:
        digest = hashlib.sha256(episode.encode()).digest()
        return f"{self.prefix}-{int.from_bytes(digest[:4], 'big') % self.shards:02d}"

    def _path(self, name: str = "") -> str:
        return object_path("v1", "configmaps", self.namespace, name)

    # -------------------------------------------------------------- reading
    def load(self) -> None:
        """Read every shard (a new leader, or after someone else wrote)."""
        with self._lock:
            for name in self.shard_names():
                self._read(name)

    @property
    def loaded(self) -> bool:
        return len(self._cache) == self.shards

    def _read(self, name: str) -> _Shard:
        try:
            obj: Obj | None = self.rest.get(self._path(name))
        except NotFound:
            obj = None
        shard = _shard_from(name, obj)
        self._cache[name] = shard
        return shard

    def episodes(self) -> list[SharedEpisode]:
        """Every record, as cached (``load`` first), oldest episode first."""
        with self._lock:
            found = [r for s in self._cache.values() for r in s.records.values()]
        return sorted(found, key=lambda e: (e.started_at, e.episode))

    def get(self, episode: str) -> SharedEpisode | None:
        with self._lock:
            shard = self._cache.get(self.shard_of(episode))
            return shard.records.get(episode) if shard is not None else None

    # -------------------------------------------------------------- writing
    def update(self, episode: str, change: Change, now: float) -> SharedEpisode | None:
        """Apply ``change`` to the record (None: there is none) and store the result with
        a compare-and-swap. On 409 the shard is read again and ``change`` decides again; it
        may raise to give up. Returns the record as stored."""
        name = self.shard_of(episode)
        with self._lock:
            for _ in range(_ATTEMPTS):
                shard = self._cache.get(name) or self._read(name)
                current = shard.records.get(episode)
                new = change(current)
                if new == current:
                    return current
                try:
                    self._write(shard, episode, new, now)
                except Conflict:
                    logger.info("shared state: %s changed under us; reading it again", name)
                    self._read(name)
                    continue
                return new
        raise TransientError(f"shared state: {name} kept changing; try again")

    def _write(self, shard: _Shard, episode: str, new: SharedEpisode | None, now: float) -> None:
        raw = dict(shard.raw)
        records = dict(shard.records)
        if new is None:
            raw.pop(episode, None)
            records.pop(episode, None)
        else:
            raw[episode] = encode(new)
            records[episode] = new
        for key in self._expired(records.values(), now):
            raw.pop(key, None)
            records.pop(key, None)
        size = sum(len(v.encode()) for v in raw.values())
        if size > self.max_bytes:
            raise SharedStateFull(
                f"shared state: {shard.name} would hold {size} bytes ({len(raw)} episodes), "
                f"over {self.max_bytes}: raise remediation.shared_state.shards"
            )
        body = self._config_map(shard, raw)
        if shard.version is None:
            stored = self.rest.create(self._path(), body)
        else:
            stored = self.rest.replace(self._path(shard.name), body)
        self._cache[shard.name] = _Shard(
            shard.name, str(stored["metadata"]["resourceVersion"]), raw, records
        )

    def _expired(self, records: Iterable[SharedEpisode], now: float) -> list[str]:
        return [
            r.episode
            for r in records
            if not r.live and r.ended_at is not None and now - r.ended_at > self.retention
        ]

    def _config_map(self, shard: _Shard, data: Mapping[str, str]) -> Obj:
        meta: Obj = {
            "name": shard.name,
            "namespace": self.namespace,
            "labels": {
                "app.kubernetes.io/name": "gpu-guardian-controller",
                STATE_LABEL: "episodes",
            },
        }
        if shard.version is not None:
            meta["resourceVersion"] = shard.version
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": dict(data)}
