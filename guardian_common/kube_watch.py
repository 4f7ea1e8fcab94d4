"""The list-then-watch loop both programs' Kubernetes caches run (the exporter's pods, the
controller's informers), without the client library itself.

List, then watch from the list's resourceVersion; list again when the watch expires
(410 Gone, at once) or fails (after a capped backoff). The watch stream is the
``kubernetes`` client's, with ``deserialize`` left on: its ERROR events then arrive as
exceptions, never as events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

HTTP_GONE = 410


def watch_arguments(version: str, *, request_timeout: float, watch_timeout: int) -> dict[str, Any]:
    """The keyword arguments of a watch call from ``version``, with bookmarks."""
    return {
        "resource_version": version,
        "allow_watch_bookmarks": True,
        "timeout_seconds": watch_timeout,
        # The socket read timeout must outlive the server-side watch timeout.
        "_request_timeout": (request_timeout, watch_timeout + request_timeout),
    }


def list_version(body: Mapping[str, Any]) -> str:
    """The resourceVersion a list answered with: the one to watch from."""
    return str((body.get("metadata") or {}).get("resourceVersion", ""))


def apply_events(
    stream: Iterable[Mapping[str, Any]], version: str, apply: Callable[[str, dict[str, Any]], None]
) -> str:
    """Call ``apply(kind, object)`` for each ADDED, MODIFIED or DELETED event until the
    stream ends; returns the last resourceVersion seen (bookmarks move it too)."""
    for event in stream:
        obj = event.get("raw_object") or {}
        seen = (obj.get("metadata") or {}).get("resourceVersion")
        if seen:
            version = str(seen)
        kind = event.get("type")
        if kind in ("ADDED", "MODIFIED", "DELETED"):
            apply(str(kind), obj)
    return version


def list_then_watch(
    stop: threading.Event,
    relist: Callable[[], str],
    watch_once: Callable[[str], str],
    failed: Callable[[Exception, int], None],
    retry_delay: Callable[[int], float],
    gone: Callable[[], None] = lambda: None,
) -> None:
    """Run until ``stop`` is set; never raises. ``failed`` is told each failure with the
    length of the streak, before the backoff; ``gone`` each expired watch."""
    failures = 0
    version = ""
    while not stop.is_set():
        try:
            if not version:
                version = relist()
            version = watch_once(version)
            failures = 0
        except Exception as exc:  # the loop edge: keep the last state, retry
            version = ""
            if getattr(exc, "status", None) == HTTP_GONE:  # client.ApiException
                gone()  # expired: list again at once
                continue
            if stop.is_set():
                break  # the stream was cut because we are stopping: not an outage
            failures += 1
            failed(exc, failures)
            stop.wait(retry_delay(failures))
