"""The object store: one global resourceVersion, an event history for watches, thread-safe.

Every write takes the store lock, bumps the global resourceVersion, records
a watch event and hands it to the live watchers. Objects handed out are deep
copies, so callers can never change stored state by accident.
"""

from __future__ import annotations

import copy
import queue
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from testbed.kubeapi import errors
from testbed.kubeapi.resources import ResourceType
from testbed.kubeapi.update import format_time, prepare_create, prepare_update, record_manager

Obj = dict[str, Any]
Predicate = Callable[[Mapping[str, Any]], bool]
Clock = Callable[[], datetime]
_Key = tuple[ResourceType, str, str]


@dataclass(frozen=True)
class StoredEvent:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    rtype: ResourceType
    namespace: str
    obj: Obj
    previous: Obj | None


@dataclass(eq=False)
class Subscription:
    """A watcher's view: events already translated for its namespace and selectors."""

    rtype: ResourceType
    namespace: str | None
    accept: Predicate
    events: queue.SimpleQueue[tuple[str, Obj] | None] = field(default_factory=queue.SimpleQueue)

    def translate(self, event: StoredEvent) -> tuple[str, Obj] | None:
        if event.rtype is not self.rtype:
            return None
        if self.namespace is not None and event.namespace != self.namespace:
            return None
        now = self.accept(event.obj)
        before = event.previous is not None and self.accept(event.previous)
        if event.type == "MODIFIED":
            # A selector watch sees objects enter and leave its selection.
            if now and before:
                return "MODIFIED", event.obj
            if now:
                return "ADDED", event.obj
            return ("DELETED", event.obj) if before else None
        return (event.type, event.obj) if now else None


class Store:
    def __init__(self, clock: Clock, *, history_limit: int = 10_000) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._rv = 0
        self._objects: dict[_Key, Obj] = {}
        self._history: deque[StoredEvent] = deque()
        self._history_limit = history_limit
        self._compacted_through = 0
        self._subscriptions: set[Subscription] = set()
        self._namespaces: set[str] = set()
        # Called under the lock after each committed write (crds.py serves new kinds).
        self.listeners: list[Callable[[StoredEvent], None]] = []

    # ------------------------------------------------------------ reads

    def now(self) -> datetime:
        return self._clock()

    @property
    def resource_version(self) -> int:
        with self._lock:
            return self._rv

    def get(self, rtype: ResourceType, namespace: str, name: str) -> Obj:
        with self._lock:
            found = self._objects.get((rtype, namespace, name))
            if found is None:
                raise errors.not_found(rtype.plural, rtype.group, name)
            return copy.deepcopy(found)

    def list_objects(
        self, rtype: ResourceType, namespace: str | None, accept: Predicate | None = None
    ) -> tuple[list[Obj], int]:
        """Matching objects sorted by (namespace, name), and the resourceVersion they reflect."""
        with self._lock:
            items = [
                copy.deepcopy(obj)
                for (kind, ns, _), obj in sorted(self._objects.items(), key=_sort_key)
                if kind is rtype
                and (namespace is None or ns == namespace)
                and (accept is None or accept(obj))
            ]
            return items, self._rv

    def exists(self, rtype: ResourceType, namespace: str, name: str) -> bool:
        with self._lock:
            return (rtype, namespace, name) in self._objects

    # ------------------------------------------------------------ writes

    def create(
        self,
        rtype: ResourceType,
        namespace: str,
        obj: Obj,
        *,
        seed: bool = False,
        dry_run: bool = False,
        manager: str | None = None,
    ) -> Obj:
        """Create ``obj``. ``seed`` keeps caller-given uid, timestamps and status (test setup)."""
        new = prepare_create(rtype, namespace, obj, seed=seed, now=format_time(self._clock()))
        meta = new["metadata"]
        with self._lock:
            key = (rtype, namespace if rtype.namespaced else "", meta["name"])
            if key in self._objects:
                raise errors.already_exists(rtype.plural, rtype.group, meta["name"])
            if rtype.namespaced and not seed and not self._namespace_exists(namespace):
                raise errors.not_found("namespaces", "", namespace)
            record_manager(new, manager, "Update", format_time(self._clock()))
            if dry_run:
                return new
            return self._commit("ADDED", rtype, key, new, None)

    def mutate(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        change: Callable[[Obj], Obj],
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str | None = None,
        seed: bool = False,
    ) -> Obj:
        """Read-modify-write under the lock (an update or a patch).

        ``change`` gets a copy of the stored object and returns the desired one.
        If that carries a resourceVersion other than the stored one, the write is
        a 409 Conflict: this is the API's optimistic concurrency.
        """
        with self._lock:
            key = (rtype, namespace if rtype.namespaced else "", name)
            current = self._objects.get(key)
            if current is None:
                raise errors.not_found(rtype.plural, rtype.group, name)
            desired = change(copy.deepcopy(current))
            if not isinstance(desired, dict):
                raise errors.bad_request("the result of the patch is not an object")
            new = prepare_update(rtype, current, desired, subresource, name, seed=seed)
            if new == current:
                return copy.deepcopy(current)  # a no-op write does not bump the version
            record_manager(new, manager, "Update", format_time(self._clock()))
            if dry_run:
                return new
            return self._commit("MODIFIED", rtype, key, new, current)

    def put(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        obj: Obj,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str | None = None,
    ) -> tuple[Obj, bool]:
        """A PUT: replace, or create where the kind allows it. Returns (object, created)."""
        with self._lock:
            if not self.exists(rtype, namespace, name):
                if subresource or not rtype.create_on_update:
                    raise errors.not_found(rtype.plural, rtype.group, name)
                if (obj.get("metadata") or {}).get("resourceVersion"):
                    raise errors.not_found(rtype.plural, rtype.group, name)
                created = self.create(rtype, namespace, obj, dry_run=dry_run, manager=manager)
                return created, True
            updated = self.mutate(
                rtype,
                namespace,
                name,
                lambda _current: copy.deepcopy(obj),
                subresource=subresource,
                dry_run=dry_run,
                manager=manager,
            )
            return updated, False

    def delete(
        self,
        rtype: ResourceType,
        namespace: str,
        name: str,
        *,
        propagation: str = "Background",
        preconditions: Mapping[str, Any] | None = None,
        dry_run: bool = False,
    ) -> Obj:
        with self._lock:
            key = (rtype, namespace if rtype.namespaced else "", name)
            current = self._objects.get(key)
            if current is None:
                raise errors.not_found(rtype.plural, rtype.group, name)
            meta = current["metadata"]
            for field_name in ("uid", "resourceVersion"):
                wanted = (preconditions or {}).get(field_name)
                if wanted and wanted != meta.get(field_name):
                    raise errors.ApiError(
                        409,
                        f"Precondition failed: {field_name} in precondition: {wanted}, "
                        f"{field_name} in object meta: {meta.get(field_name)}",
                    )
            if dry_run:
                return copy.deepcopy(current)
            removed = self._remove(key)
            self._delete_dependents(removed, propagation)
            return removed

    # ------------------------------------------------------------ watches

    def subscribe(
        self,
        rtype: ResourceType,
        namespace: str | None,
        accept: Predicate,
        since: int | None,
    ) -> tuple[Subscription, list[tuple[str, Obj]]]:
        """Register a watcher; returns it and the events to send first.

        ``since=None`` starts with a synthetic ADDED per existing object; a
        version replays the history after it, or raises 410 Expired when that
        history has been compacted away.
        """
        with self._lock:
            sub = Subscription(rtype, namespace, accept)
            if since is None:
                items, _ = self.list_objects(rtype, namespace, accept)
                initial = [("ADDED", item) for item in items]
            else:
                if since < self._compacted_through:
                    raise errors.expired(
                        f"too old resource version: {since} ({self._compacted_through + 1})"
                    )
                initial = []
                for event in self._history:
                    if event.rv > since and (translated := sub.translate(event)) is not None:
                        initial.append((translated[0], copy.deepcopy(translated[1])))
            self._subscriptions.add(sub)
            return sub, initial

    def bookmark_version(self, sub: Subscription) -> int | None:
        """The version a bookmark may claim for ``sub``: None while it has undelivered events."""
        with self._lock:
            return self._rv if sub.events.empty() else None

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subscriptions.discard(sub)

    def close_watches(self) -> None:
        """Wake every watcher so that it ends its stream."""
        with self._lock:
            for sub in self._subscriptions:
                sub.events.put(None)

    def compact(self) -> int:
        """Forget the whole event history (as etcd compaction does); returns the current version.

        A watch from any older version then gets 410 Gone.
        """
        with self._lock:
            self._history.clear()
            self._compacted_through = self._rv
            return self._rv

    # ------------------------------------------------------------ internals

    def _namespace_exists(self, namespace: str) -> bool:
        return namespace in self._namespaces

    def _commit(
        self, kind: str, rtype: ResourceType, key: _Key, new: Obj, previous: Obj | None
    ) -> Obj:
        self._rv += 1
        new["metadata"]["resourceVersion"] = str(self._rv)
        self._objects[key] = new
        if _is_namespace(rtype):
            self._namespaces.add(key[2])
        self._record(StoredEvent(self._rv, kind, rtype, key[1], new, previous))
        return copy.deepcopy(new)

    def _remove(self, key: _Key) -> Obj:
        previous = self._objects.pop(key)
        if _is_namespace(key[0]):
            self._namespaces.discard(key[2])
        self._rv += 1
        removed = copy.deepcopy(previous)
        removed["metadata"]["resourceVersion"] = str(self._rv)
        self._record(StoredEvent(self._rv, "DELETED", key[0], key[1], removed, previous))
        return copy.deepcopy(removed)

    def _record(self, event: StoredEvent) -> None:
        for listener in self.listeners:
            listener(event)
        self._history.append(event)
        while len(self._history) > self._history_limit:
            self._compacted_through = self._history.popleft().rv
        for sub in self._subscriptions:
            translated = sub.translate(event)
            if translated is not None:
                sub.events.put((translated[0], copy.deepcopy(translated[1])))

    def _delete_dependents(self, removed: Obj, propagation: str) -> None:
        """Garbage collection: remove (or orphan) objects owned by ``removed``."""
        uid = removed["metadata"]["uid"]
        rtype_is_namespace = removed["kind"] == "Namespace" and removed["apiVersion"] == "v1"
        if not rtype_is_namespace and not any(
            obj["metadata"].get("ownerReferences") for obj in self._objects.values()
        ):
            return
        for key in list(self._objects):
            obj = self._objects.get(key)
            if obj is None:
                continue  # already removed by a nested cascade
            if rtype_is_namespace and key[0].namespaced and key[1] == removed["metadata"]["name"]:
                self._delete_dependents(self._remove(key), "Background")
                continue
            refs = obj["metadata"].get("ownerReferences") or []
            if not any(ref.get("uid") == uid for ref in refs):
                continue
            if propagation == "Orphan":
                new = copy.deepcopy(obj)
                kept = [r for r in refs if r.get("uid") != uid]
                if kept:
                    new["metadata"]["ownerReferences"] = kept
                else:
                    del new["metadata"]["ownerReferences"]  # empty lists are omitted upstream
                self._commit("MODIFIED", key[0], key, new, obj)
            else:
                self._delete_dependents(self._remove(key), propagation)


def _sort_key(item: tuple[_Key, Obj]) -> tuple[str, str]:
    return item[0][1], item[0][2]


def _is_namespace(rtype: ResourceType) -> bool:
    return rtype.kind == "Namespace" and not rtype.group
