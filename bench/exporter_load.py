"""Exporter under load: many scrapers at once, with and without basic auth (issue #14),
and beside connections that send nothing or trickle their request (issue #30).

Serves one busy node's series (bench/exporter_bench.py's: 8 GPUs, 64 pods, 512 processes)
three ways in this process, and scrapes each from a separate process (so the scrapers do
not compete with the servers for the GIL), all scrapers released at once:

- baseline: the same series in a prometheus_client registry, served by prometheus_client's
  own server (``start_wsgi_server``), no auth;
- ours: ``ExporterApp`` + ``HttpServer`` exactly as ``guardian-exporter serve`` builds them
  (--max-requests 10, its connection limit, backlog and deadline), without auth and with
  a bcrypt (cost 10) users file.

For 10, 50 and 200 concurrent scrapers it prints p50/p99 latency of the answers and the
count of each outcome: 200, 503 (over --max-requests), 429, other HTTP, timeouts (10 s,
Prometheus's default scrape timeout) and connection errors. Then 200 wrong passwords
from one client, with the server's CPU time they cost.

Then each server again, without auth, while another process holds ``--attackers``
connections open: idle ones (connected, nothing sent) or slowloris ones (a request
trickled a byte every 0.1 s); whichever the server closes is opened again at once. For
10 scrapers (no more than --max-requests, so every scrape is due a 200) and for 200, it
prints the same figures, the p99 against the same server without the attackers, and how
many attacking connections the server closed.

    .venv/bin/python bench/exporter_load.py [--per-scraper 5] [--max-requests 10]
        [--attackers 100]
"""

from __future__ import annotations

import argparse
import base64
import multiprocessing
import socket
import statistics
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import bcrypt
from exporter_bench import INTERVAL, Clock, busy_node, floor_registry, pct
from prometheus_client.exposition import start_wsgi_server

from exporter.adapters.procfs import ProcReader
from exporter.app.collection import CollectionLoop, CollectionTiming, NodeSources, SnapshotStore
from exporter.app.server import REQUEST_TIMEOUT_S, ExporterApp, HttpServer, connection_limit
from exporter.engine.snapshot_builder import SnapshotSetup
from exporter.engine.vgpu import VgpuRatios
from guardian_common.http_auth import Authenticator
from guardian_common.http_server import ServerLimits
from testbed.node.scenario_backend import SimulatedBackend

SCRAPE_TIMEOUT_S = 10.0
CONCURRENCY = (10, 50, 200)
USER, PASSWORD = "prometheus", "scrape-password"


def basic(password: str) -> dict[str, str]:
    token = base64.b64encode(f"{USER}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def scrape(url: str, headers: dict[str, str]) -> tuple[str, float]:
    started = time.perf_counter()
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=SCRAPE_TIMEOUT_S) as response:  # noqa: S310
            response.read()
            outcome = str(response.status)
    except urllib.error.HTTPError as exc:
        exc.read()
        outcome = str(exc.code)
    except TimeoutError:
        outcome = "timeout"
    except urllib.error.URLError as exc:
        timed_out = isinstance(exc.reason, TimeoutError)
        outcome = "timeout" if timed_out else "conn-error"
    except OSError:
        outcome = "conn-error"
    return outcome, time.perf_counter() - started


def load(job: tuple[str, int, int, str | None]) -> list[tuple[str, float]]:
    """In the scraper process: ``scrapers`` threads, released together, ``per`` scrapes
    each, with ``password`` (``{n}`` in it: the scraper's number) or no credentials."""
    url, scrapers, per, password = job
    results: list[tuple[str, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(scrapers)

    def worker(n: int) -> None:
        headers = basic(password.format(n=n)) if password is not None else {}
        start.wait()
        mine = [scrape(url, headers) for _ in range(per)]
        with lock:
            results.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(scrapers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def p99_answered(results: list[tuple[str, float]]) -> float:
    answered = [seconds for outcome, seconds in results if outcome not in ("timeout", "conn-error")]
    return pct(answered, 0.99) if answered else float("nan")


def report(name: str, results: list[tuple[str, float]]) -> None:
    outcomes = Counter(outcome for outcome, _ in results)
    answered = [seconds for outcome, seconds in results if outcome not in ("timeout", "conn-error")]
    ok = [seconds for outcome, seconds in results if outcome == "200"]
    p50 = pct(answered, 0.5) * 1e3 if answered else float("nan")
    p99 = pct(answered, 0.99) * 1e3 if answered else float("nan")
    ok50 = statistics.median(ok) * 1e3 if ok else float("nan")
    counts = " ".join(f"{k}={outcomes.get(k, 0)}" for k in ("200", "503", "429", "401"))
    other = sum(n for k, n in outcomes.items() if k not in ("200", "503", "429", "401"))
    print(
        f"  {name:<22} p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  (200s: p50 {ok50:7.1f} ms)  "
        f"{counts} other-http={other - outcomes['timeout'] - outcomes['conn-error']} "
        f"timeouts={outcomes['timeout']} conn-errors={outcomes['conn-error']}"
    )


ATTACK_SCRAPERS = (10, 200)
SLOW_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: exporter\r\n"


def _attack_open(port: int, slow: bool) -> socket.socket | None:
    try:
        sock = socket.create_connection(("127.0.0.1", port), timeout=2)
        if slow:
            sock.send(SLOW_REQUEST[:1])
        sock.setblocking(False)
        return sock
    except OSError:
        return None


def _attack_alive(sock: socket.socket, slow: bool, sent: int) -> bool:
    """False once the server has closed (or answered) it; trickles one more byte."""
    try:
        sock.recv(1)
        return False  # b"" (closed) or an answer: either way, over
    except BlockingIOError:
        pass  # nothing yet: still held
    except OSError:
        return False
    if slow:
        try:
            sock.send(
                (SLOW_REQUEST + b"X-Slow: " + b"a" * 10_000)[sent % 10_000 : sent % 10_000 + 1]
            )
        except OSError:
            return False
    return True


def attack(
    port: int, count: int, slow: bool, ready: Event, stop: Event, closed: Synchronized[int]
) -> None:
    """In the attacker process: ``count`` connections held open (``slow``: trickling),
    each one the server closes opened again; ``closed`` counts those."""
    socks = [_attack_open(port, slow) for _ in range(count)]
    ready.set()
    sent = 1
    while not stop.wait(0.1):
        sent += 1
        for i, sock in enumerate(socks):
            if sock is not None and _attack_alive(sock, slow, sent):
                continue
            if sock is not None:
                sock.close()
                with closed.get_lock():
                    closed.value += 1
            socks[i] = _attack_open(port, slow)
    for sock in socks:  # closed since the last look
        if sock is not None and not _attack_alive(sock, False, sent):
            with closed.get_lock():
                closed.value += 1
        if sock is not None:
            sock.close()


def serve_ours(store: SnapshotStore, max_requests: int, auth: Authenticator) -> HttpServer:
    """As exporter/app/serve.py builds it."""
    app = ExporterApp(store, max_requests=max_requests, auth=auth)
    limits = ServerLimits(
        max_connections=connection_limit(max_requests), request_timeout=REQUEST_TIMEOUT_S
    )
    server = HttpServer(app, "127.0.0.1", 0, limits=limits)
    server.start()
    return server


def cpu_of(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.process_time()
    result = fn()
    return result, time.process_time() - started


Run = Callable[..., list[tuple[str, float]]]


def attacks(run: Run, servers: dict[str, int], count: int, per: int) -> None:
    """Each server, without auth, beside ``count`` idle and then slowloris connections."""
    context = multiprocessing.get_context("spawn")
    for scrapers in ATTACK_SCRAPERS:
        print(f"{scrapers} concurrent scrapers beside {count} attacking connections:")
        for name, port in servers.items():
            run(name, port, scrapers, None, 1, False)  # warm-up, not shown
            calm = run(name, port, scrapers, None, per)
            for slow in (False, True):
                kind = "slowloris" if slow else "idle"
                closed = context.Value("i", 0)
                ready, stop = context.Event(), context.Event()
                holder = context.Process(
                    target=attack, args=(port, count, slow, ready, stop, closed)
                )
                holder.start()
                ready.wait(60)
                time.sleep(1.5)  # held for a while: a second old, and trickling
                try:
                    results = run(f"{name}, {count} {kind}", port, scrapers, None, per)
                finally:
                    stop.set()
                    holder.join(60)
                ratio = p99_answered(results) / p99_answered(calm)
                print(f"    p99 {ratio:.2f}x the same server without them; it closed "
                      f"{closed.value} attacking connections meanwhile")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per-scraper", type=int, default=5, help="scrapes per scraper")
    parser.add_argument("--max-requests", type=int, default=10, help="as --max-requests")
    parser.add_argument("--attackers", type=int, default=100, help="idle or slow connections")
    parser.add_argument("--attacks-only", action="store_true", help="skip the crowd and auth")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock()
        scenario = busy_node(Path(tmp))
        store = SnapshotStore()
        collector = CollectionLoop(
            NodeSources(SimulatedBackend(scenario, clock), ProcReader(Path(tmp))), store,
            SnapshotSetup("bench-node", VgpuRatios(2.0)),
            CollectionTiming(INTERVAL, timeout=30.0, backoff_max=60.0, clock=clock),
        )  # fmt: skip
        collector.run_cycle()
        if store.current is None:
            raise SystemExit("the collector published nothing")
        body, _ = store.current.body(None)

    users = {USER: bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10))}
    baseline, _ = start_wsgi_server(0, addr="127.0.0.1", registry=floor_registry(body))
    open_server = serve_ours(store, args.max_requests, Authenticator())
    print(f"{len(body):,} bytes per scrape; --max-requests {args.max_requests}; "
          f"{args.per_scraper} scrapes per scraper; timeout {SCRAPE_TIMEOUT_S:.0f} s")  # fmt: skip
    print("ours with auth starts cold each time, as after a restart: the first wave of one")
    print("new header shares one bcrypt, and the requests above the cap meanwhile get 503")
    per = args.per_scraper
    context = multiprocessing.get_context("spawn")
    with context.Pool(1) as pool:

        def run(
            name: str, port: int, scrapers: int, password: str | None, per: int, show: bool = True
        ) -> list[tuple[str, float]]:
            url = f"http://127.0.0.1:{port}/metrics"
            results: list[tuple[str, float]] = pool.apply(load, ((url, scrapers, per, password),))
            if show:
                report(name, results)
            return results

        try:
            servers = {"baseline (prom_client)": baseline.server_address[1]}
            servers["ours, no auth"] = open_server.port
            if args.attacks_only:
                attacks(run, servers, args.attackers, per)
                return
            for scrapers in CONCURRENCY:
                print(f"{scrapers} concurrent scrapers:")
                port = baseline.server_address[1]
                base = run("baseline (prom_client)", port, scrapers, None, per)
                plain = run("ours, no auth", open_server.port, scrapers, None, per)
                auth_server = serve_ours(store, args.max_requests, Authenticator(users))
                try:
                    auth = run("ours, basic auth", auth_server.port, scrapers, PASSWORD, per)
                finally:
                    auth_server.stop()
                floor = p99_answered(base)
                print(f"  p99 ratio to the baseline: no auth {p99_answered(plain) / floor:.2f}x, "
                      f"basic auth {p99_answered(auth) / floor:.2f}x   "
                      f"[goal: auth p99 < 1 s, no timeouts]")  # fmt: skip
            auth_server = serve_ours(store, args.max_requests, Authenticator(users))
            try:
                print("200 different wrong passwords at once from one client (10 a minute):")
                _, cpu = cpu_of(lambda: run("ours, basic auth", auth_server.port, 200, "bad{n}", 1))
                bcrypt_s = cpu_of(lambda: bcrypt.checkpw(b"x", users[USER]))[1]
                print(f"  server CPU: {cpu:.2f} s (a bcrypt for each: {200 * bcrypt_s:.1f} s)")
            finally:
                auth_server.stop()
            attacks(run, servers, args.attackers, per)
        finally:
            open_server.stop()
            baseline.shutdown()
            baseline.server_close()


if __name__ == "__main__":
    main()
