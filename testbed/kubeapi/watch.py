"""Watch streams: newline-delimited JSON events, resumable from a resourceVersion.

Semantics follow the API server: no resourceVersion (or ``"0"``) starts with a
synthetic ADDED for every current object; a version replays the history after
it, and a compacted one gets an ERROR event carrying a 410 Expired Status.
``timeoutSeconds`` ends the stream; ``allowWatchBookmarks`` adds BOOKMARK
events; ``sendInitialEvents`` marks the end of the initial ADDED events with
a bookmark annotated ``k8s.io/initial-events-end``.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from testbed.kubeapi import errors
from testbed.kubeapi.selectors import compile_filter
from testbed.kubeapi.store import Obj, Store, Subscription
from testbed.kubeapi.urls import ResourceRoute

DEFAULT_TIMEOUT_S = 1800.0
_POLL_S = 0.2
_TRUE = ("true", "1")

WriteEvent = Callable[[Mapping[str, Any]], bool]


@dataclass
class WatchPlan:
    """What a watch request will stream, decided before the response starts."""

    route: ResourceRoute
    timeout_s: float
    bookmarks: bool
    initial_end_bookmark: bool
    subscription: Subscription | None
    initial: list[tuple[str, Obj]]
    error: errors.ApiError | None  # sent as an ERROR event (410 Expired)


def plan_watch(store: Store, route: ResourceRoute, query: Mapping[str, str]) -> WatchPlan:
    """Parse the watch parameters and subscribe; a bad parameter is an HTTP error."""
    accept = compile_filter(query.get("labelSelector"), query.get("fieldSelector"))
    raw_rv = query.get("resourceVersion", "")
    send_initial = query.get("sendInitialEvents", "").lower() in _TRUE
    try:
        since = None if raw_rv in ("", "0") or send_initial else int(raw_rv)
    except ValueError as exc:
        raise errors.bad_request(f"invalid resourceVersion {raw_rv!r}") from exc
    try:
        timeout_s = float(query.get("timeoutSeconds") or DEFAULT_TIMEOUT_S)
    except ValueError as exc:
        raise errors.bad_request("timeoutSeconds must be a number") from exc
    plan = WatchPlan(
        route=route,
        timeout_s=timeout_s,
        bookmarks=query.get("allowWatchBookmarks", "").lower() in _TRUE,
        initial_end_bookmark=send_initial,
        subscription=None,
        initial=[],
        error=None,
    )
    try:
        plan.subscription, plan.initial = store.subscribe(
            route.rtype, route.namespace, accept, since
        )
    except errors.ApiError as exc:
        if exc.code != 410:
            raise
        plan.error = exc
    return plan


def _bookmark(route: ResourceRoute, rv: int, *, initial_end: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(rv)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    obj = {"kind": route.rtype.kind, "apiVersion": route.rtype.api_version, "metadata": meta}
    return {"type": "BOOKMARK", "object": obj}


def stream_watch(
    store: Store,
    plan: WatchPlan,
    write: WriteEvent,
    stopping: threading.Event,
    *,
    client_gone: Callable[[], bool],
    bookmark_interval_s: float,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """Write the plan's events until the timeout, the client leaves, or the server stops."""
    if plan.error is not None:
        write({"type": "ERROR", "object": plan.error.status()})
        return
    sub = plan.subscription
    if sub is None:
        return
    try:
        for kind, obj in plan.initial:
            if not write({"type": kind, "object": obj}):
                return
        if plan.initial_end_bookmark:
            rv = store.bookmark_version(sub)
            if rv is not None and not write(_bookmark(plan.route, rv, initial_end=True)):
                return
        _follow(store, plan, sub, write, stopping, client_gone, bookmark_interval_s, monotonic)
    finally:
        store.unsubscribe(sub)


def _follow(
    store: Store,
    plan: WatchPlan,
    sub: Subscription,
    write: WriteEvent,
    stopping: threading.Event,
    client_gone: Callable[[], bool],
    bookmark_interval_s: float,
    monotonic: Callable[[], float],
) -> None:
    deadline = monotonic() + plan.timeout_s
    next_bookmark = monotonic() + bookmark_interval_s
    while not stopping.is_set():
        now = monotonic()
        if now >= deadline:
            break
        if plan.bookmarks and now >= next_bookmark:
            next_bookmark = now + bookmark_interval_s
            rv = store.bookmark_version(sub)
            if rv is not None and not write(_bookmark(plan.route, rv)):
                return
        try:
            item = sub.events.get(timeout=min(_POLL_S, max(deadline - now, 0.0)))
        except queue.Empty:
            if client_gone():
                return
            continue
        if item is None or not write({"type": item[0], "object": item[1]}):
            return
    if plan.bookmarks and not stopping.is_set():
        rv = store.bookmark_version(sub)
        if rv is not None:
            write(_bookmark(plan.route, rv))
