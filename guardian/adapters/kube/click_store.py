"""Slack clicks every replica shares: one ConfigMap in the controller's namespace.

A click is recorded here *before* Slack is told we have it (the ack), and marked done
after its action: a leader killed between the two leaves it pending, and the next leader
acts on it. The record's key is the click's idempotency key (action, message, user and
the press's ``action_ts``), so Slack's retry of one delivery finds its twin and is not
acted on twice, while pressing the same button again later (a second *Keep 24h* once
the first has run out) is a new click. Writes are compare-and-swap on the ConfigMap's
``resourceVersion``, through the leader's fenced client. Done records are dropped after
``retention`` (an hour: Slack retries within minutes), which keeps the ConfigMap small.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from guardian.adapters.kube.rest import Conflict, KubeRest, NotFound, Obj, object_path
from guardian.engine.notify.click_plan import Click
from guardian_common.errors import TransientError

logger = logging.getLogger(__name__)

NAME = "gpu-guardian-clicks"
PENDING = "pending"
DONE = "done"
_ATTEMPTS = 4


@dataclass(frozen=True)
class ClickRecord:
    click: Click
    state: str  # pending | done
    at: float  # when recorded, or when done
    result: str = ""


def _doc(r: ClickRecord) -> str:
    c = r.click
    return json.dumps(
        {
            "action": c.action_id,
            "episode": c.episode,
            "user": c.user,
            "channel": c.channel_id,
            "ts": c.message_ts,
            "actionTs": c.action_ts,
            "state": r.state,
            "at": round(r.at, 3),
            "result": r.result,
        },
        separators=(",", ":"),
    )


def _record(text: str) -> ClickRecord:
    d: dict[str, Any] = json.loads(text)
    click = Click(d["action"], d["episode"], d["user"], d["channel"], d["ts"], d["actionTs"])
    return ClickRecord(click, d["state"], d["at"], d.get("result", ""))


def data_key(click: Click) -> str:
    return hashlib.sha256(click.key.encode()).hexdigest()[:32]


class ClickStore:
    def __init__(
        self, rest: KubeRest, namespace: str, *, name: str = NAME, retention: float = 3600.0
    ) -> None:
        self.rest = rest
        self.namespace = namespace
        self.name = name
        self.retention = retention
        self._lock = threading.Lock()

    def _path(self, name: str = "") -> str:
        return object_path("v1", "configmaps", self.namespace, name)

    def _read(self) -> tuple[str | None, dict[str, str]]:
        try:
            obj = self.rest.get(self._path(self.name))
        except NotFound:
            return None, {}
        data = {str(k): str(v) for k, v in (obj.get("data") or {}).items()}
        return str(obj["metadata"]["resourceVersion"]), data

    def records(self) -> dict[str, ClickRecord]:
        _, data = self._read()
        out: dict[str, ClickRecord] = {}
        for key, text in data.items():
            try:
                out[key] = _record(text)
            except (ValueError, KeyError, TypeError) as exc:
                logger.warning("clicks: record %s unreadable, left alone: %s", key, exc)
        return out

    def get(self, click: Click) -> ClickRecord | None:
        return self.records().get(data_key(click))

    def pending(self) -> list[ClickRecord]:
        found = [r for r in self.records().values() if r.state == PENDING]
        return sorted(found, key=lambda r: r.click.action_ts)

    def record(self, click: Click, now: float) -> ClickRecord | None:
        """Record ``click`` as pending; returns the existing record instead when its twin
        was recorded before (None: this one is new)."""
        found: list[ClickRecord] = []

        def change(data: dict[str, str]) -> dict[str, str] | None:
            text = data.get(data_key(click))
            if text is not None:
                found.append(_record(text))
                return None
            return {**data, data_key(click): _doc(ClickRecord(click, PENDING, now))}

        self._update(change, now)
        return found[0] if found else None

    def finish(self, click: Click, now: float, result: str) -> None:
        def change(data: dict[str, str]) -> dict[str, str] | None:
            return {**data, data_key(click): _doc(ClickRecord(click, DONE, now, result[:300]))}

        self._update(change, now)

    def forget(self, click: Click, now: float) -> None:
        """Drop the record: the click changed nothing (refused), so pressing again later
        (once allowed, or the kill switch off) is a new click, not a repeat."""

        def change(data: dict[str, str]) -> dict[str, str] | None:
            if data_key(click) not in data:
                return None
            return {k: v for k, v in data.items() if k != data_key(click)}

        self._update(change, now)

    def _update(self, change: Any, now: float) -> None:
        with self._lock:
            for _ in range(_ATTEMPTS):
                version, data = self._read()
                new = change(data)
                if new is None:
                    return
                new = {k: v for k, v in new.items() if not self._expired(v, now)}
                try:
                    self._write(version, new)
                except Conflict:
                    continue
                return
        raise TransientError(f"clicks: {self.name} kept changing; try again")

    def _expired(self, text: str, now: float) -> bool:
        try:
            r = _record(text)
        except (ValueError, KeyError, TypeError):
            return False
        return r.state == DONE and now - r.at > self.retention

    def _write(self, version: str | None, data: dict[str, str]) -> None:
        meta: Obj = {
            "name": self.name,
            "namespace": self.namespace,
            "labels": {
                "app.kubernetes.io/name": "gpu-guardian-controller",
                "gpu-guardian.io/state": "clicks",
            },
        }
        body: Obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
        if version is None:
            self.rest.create(self._path(), body)
        else:
            meta["resourceVersion"] = version
            self.rest.replace(self._path(self.name), body)
