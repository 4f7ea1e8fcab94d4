"""The list-then-watch loop both programs' Kubernetes caches share."""

from __future__ import annotations

import threading
from typing import Any

from guardian_common.kube_watch import apply_events, list_then_watch, watch_arguments


def _event(kind: str, name: str, version: str) -> dict[str, Any]:
    return {"type": kind, "raw_object": {"metadata": {"name": name, "resourceVersion": version}}}


def test_events_are_applied_and_bookmarks_only_move_the_version() -> None:
    seen: list[tuple[str, str]] = []
    stream = [
        _event("ADDED", "a", "2"),
        _event("BOOKMARK", "", "3"),
        _event("DELETED", "a", "4"),
        _event("BOOKMARK", "", "5"),
    ]
    version = apply_events(
        stream, "1", lambda kind, obj: seen.append((kind, obj["metadata"]["name"]))
    )
    assert seen == [("ADDED", "a"), ("DELETED", "a")]
    assert version == "5"


def test_the_socket_timeout_outlives_the_server_side_watch() -> None:
    args = watch_arguments("7", request_timeout=10.0, watch_timeout=300)
    assert args["resource_version"] == "7"
    assert args["_request_timeout"] == (10.0, 310.0)


class _Gone(Exception):
    status = 410


def test_an_expired_watch_lists_again_at_once_and_a_failure_backs_off() -> None:
    stop = threading.Event()
    calls: list[str] = []
    failures: list[int] = []
    delays: list[int] = []

    def relist() -> str:
        calls.append("list")
        if calls.count("list") == 2:
            raise OSError("refused")
        return "1"

    def watch_once(version: str) -> str:
        calls.append("watch")
        if calls.count("watch") == 1:
            raise _Gone
        stop.set()
        return version

    def delay(n: int) -> float:
        delays.append(n)
        return 0.0

    gone: list[bool] = []
    list_then_watch(
        stop, relist, watch_once, lambda _e, n: failures.append(n), delay, lambda: gone.append(True)
    )
    assert calls == ["list", "watch", "list", "list", "watch"]
    assert gone == [True]
    assert failures == [1]
    assert delays == [1]
