"""The controller's listeners under hostile load (issue #30), each against itself unloaded
in the same run:

- the controller API (``web:`` defaults: 64 connections, 10 s deadline): ``/healthz``
  latency (what a kubelet liveness probe waits) unloaded, beside 64 half-open
  connections, and beside 64 requests held in their handler plus 64 half-open ones;
- the Slack HTTP intake: the time to acknowledge each of 300 signed clicks sent at once
  (Slack's limit is 3 s), while taking a click costs what recording it in the cluster
  does (``--take-ms`` each, one at a time, as the click store's writes are), against
  one click at a time.

Every client runs in a separate process, so it does not compete with the servers for
the GIL.

    .venv/bin/python bench/listener_load.py [--clicks 300] [--take-ms 10] [--probes 20]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from typing import Any, cast

from exporter_bench import pct

from guardian.adapters.slack.http_intake import InteractivityServer
from guardian.app.http_api import EngineHTTPServer, web_guard
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.web import WebSettings
from guardian_common.redact import Secret
from testbed.slackapi.interactions import post_signed

SECRET = "bench-signing-secret"  # noqa: S105 - the benchmark's own
PATH = "/slack/interactivity"
CLIENT_TIMEOUT = 15.0


def timed(fn: Any) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        outcome = str(fn())
    except urllib.error.HTTPError as exc:
        outcome = str(exc.code)
    except OSError as exc:
        outcome = "timeout" if "timed out" in str(exc) else "conn-error"
    return outcome, time.perf_counter() - started


def probe(url: str) -> int:
    with urllib.request.urlopen(url, timeout=CLIENT_TIMEOUT) as response:  # noqa: S310
        response.read()
        return int(response.status)


def probes(job: tuple[str, int]) -> list[tuple[str, float]]:
    """In the client process: ``count`` probes, one after the other."""
    url, count = job
    return [timed(lambda: probe(url)) for _ in range(count)]


def click(port: int, n: int) -> int:
    payload = {
        "type": "block_actions",
        "user": {"id": "U0ALICE"},
        "container": {"type": "message", "message_ts": "1.000001", "channel_id": "C0ALERTS"},
        "actions": [{"action_id": "keep_4h", "value": "e1", "action_ts": f"{2 + n}.000001"}],
    }
    url = f"http://127.0.0.1:{port}{PATH}"
    return post_signed(url, payload, SECRET, timestamp=time.time(), timeout=CLIENT_TIMEOUT)[0]


def clicks(job: tuple[int, int, bool]) -> list[tuple[str, float]]:
    """In the client process: ``count`` clicks, all at once or one after the other."""
    port, count, burst = job
    if not burst:
        return [timed(lambda n=n: click(port, n)) for n in range(count)]
    results: list[tuple[str, float]] = []
    start = threading.Barrier(count)

    def one(n: int) -> None:
        start.wait()
        results.append(timed(lambda: click(port, n)))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def report(name: str, results: list[tuple[str, float]]) -> float:
    answered = [s for outcome, s in results if outcome not in ("timeout", "conn-error")]
    counts = Counter(outcome for outcome, _ in results)
    p50 = pct(answered, 0.5) * 1e3 if answered else float("nan")
    p99 = pct(answered, 0.99) * 1e3 if answered else float("nan")
    top = max(answered) * 1e3 if answered else float("nan")
    shown = " ".join(f"{k}={v}" for k, v in sorted(counts.items()))
    print(f"  {name:<44} p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  max {top:8.1f} ms  {shown}")
    return p99


class HeldEngine:
    """What the API asks of the rule engine; ``/api/v1/alerts`` waits while ``held``."""

    def __init__(self) -> None:
        self.released = threading.Event()

    def active_alerts(self) -> list[Any]:
        self.released.wait(60)
        return []

    def ready(self) -> bool:
        return True


def half_open(port: int, count: int) -> list[socket.socket]:
    return [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]


def controller(pool: Any, count: int) -> None:
    engine = HeldEngine()
    server = EngineHTTPServer(cast("RuleEngine", engine), "127.0.0.1", 0, web_guard(WebSettings()))
    server.start()
    port = server.address[1]
    url = f"http://127.0.0.1:{port}/healthz"
    print("controller API, /healthz one after the other (web: defaults):")
    try:
        calm = report("unloaded", pool.apply(probes, ((url, count),)))
        idle = half_open(port, 64)
        p99 = report("beside 64 half-open connections", pool.apply(probes, ((url, count),)))
        print(f"    p99 {p99 / calm:.1f}x unloaded")
        for sock in idle:
            sock.close()
        flood = [threading.Thread(target=_request, args=(port,)) for _ in range(64)]
        for thread in flood:
            thread.start()
        time.sleep(0.5)
        idle = half_open(port, 64)
        p99 = report("beside 64 held requests + 64 half-open", pool.apply(probes, ((url, count),)))
        print(f"    p99 {p99 / calm:.1f}x unloaded")
        for sock in idle:
            sock.close()
    finally:
        engine.released.set()
        server.stop()


def _request(port: int) -> None:
    with contextlib.suppress(OSError):  # beyond the cap: shed or closed
        probe(f"http://127.0.0.1:{port}/api/v1/alerts")


def slack(pool: Any, count: int, take_s: float) -> None:
    lock = threading.Lock()
    taken: list[Any] = []

    def accept(payload: dict[str, Any]) -> bool:  # one cluster write at a time
        with lock:
            time.sleep(take_s)
            taken.append(payload)
        return True

    intake = InteractivityServer("127.0.0.1:0", PATH, Secret(SECRET), accept, time.time)
    intake.start()
    port = intake.address[1]
    print(f"Slack HTTP intake, time to acknowledge (taking a click: {take_s * 1e3:.0f} ms):")
    try:
        single = pool.apply(clicks, ((port, 20, False),))
        report("one click at a time", single)
        calm = pct([s for _, s in single], 0.5)
        p99 = report(f"{count} clicks at once", pool.apply(clicks, ((port, count, True),)))
        print(f"    p99 {p99 / 1e3 / calm:.1f}x a single click's p50   [goal: every ack < 1 s]")
        deadline = time.monotonic() + 60
        while len(taken) < count + 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        print(f"    clicks taken afterwards: {len(taken)} of {count + 20}")
    finally:
        intake.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clicks", type=int, default=300, help="clicks sent at once")
    parser.add_argument("--take-ms", type=float, default=10.0, help="cost of taking a click")
    parser.add_argument("--probes", type=int, default=20, help="probes per scenario")
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:
        controller(pool, args.probes)
        slack(pool, args.clicks, args.take_ms / 1e3)


if __name__ == "__main__":
    main()
