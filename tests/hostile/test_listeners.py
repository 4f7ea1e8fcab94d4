"""Hostile clients against every listener (listeners.py): connections that send nothing,
or trickle their request a byte at a time, must not keep a legitimate request or a probe
from being answered; a request that trickles is cut at the deadline; a malformed request
gets a 4xx and no traceback; and the Slack intake acknowledges a burst of clicks before
doing any of their work.

No timings are asserted: each listener's deadline is a minute here while a client waits
5 s, so a request that had to wait for a held connection to be cut would fail.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest

from tests.hostile.listeners import (
    LISTENERS,
    MAX_REQUESTS,
    Listener,
    answer_status,
    closed_by_server,
    connect,
    listener,
    post_click,
)

PARTIAL = b"POST / HTTP/1.1\r\nHost: guardian\r\nContent-Length: 10\r\n"  # never finished


@pytest.fixture(params=LISTENERS)
def target(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Listener]:
    with listener(request.param, monkeypatch) as found:
        yield found


def served(target: Listener, times: int = 5) -> None:
    """Legitimate requests and probes are answered (within the client's 5 s)."""
    assert [target.request() for _ in range(times)] == [200] * times
    if target.probe is not None:
        assert [target.probe() for _ in range(times)] == [200] * times


def test_idle_connections_hold_no_request_slot(target: Listener) -> None:
    # As many as --max-requests (which made every scrape 503), then more than the cap.
    idle = [connect(target.port) for _ in range(MAX_REQUESTS)]
    try:
        served(target)
        idle += [connect(target.port) for _ in range(target.cap + 16)]
        for sock in idle[::2]:
            with contextlib.suppress(OSError):  # closed at the cap: the point
                sock.sendall(PARTIAL)
        served(target)
    finally:
        for sock in idle:
            sock.close()


@contextlib.contextmanager
def trickling(port: int, count: int) -> Iterator[list[object]]:
    """``count`` connections sending a request a byte every 0.1 s (slowloris)."""
    socks = [connect(port) for _ in range(count)]
    stop = threading.Event()

    def feed() -> None:
        for byte in PARTIAL + b"X-Slow: " + b"a" * 10_000:
            if stop.wait(0.1):
                return
            for sock in socks:
                with contextlib.suppress(OSError):
                    sock.send(bytes([byte]))

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        yield list(socks)
    finally:
        stop.set()
        feeder.join()
        for sock in socks:
            sock.close()


def test_trickling_connections_leave_requests_and_probes_served(target: Listener) -> None:
    with trickling(target.port, 40):
        time.sleep(0.3)  # a few bytes in
        served(target)


@pytest.mark.parametrize("name", LISTENERS)
def test_a_trickling_request_is_cut_at_the_deadline(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with listener(name, monkeypatch, timeout=0.5) as target, trickling(target.port, 3) as socks:
        assert all(closed_by_server(sock) for sock in socks)  # type: ignore[arg-type]
        served(target, times=1)


@pytest.mark.parametrize("name", ["exporter", "controller"])
def test_probes_are_answered_while_every_request_thread_is_held(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with listener(name, monkeypatch) as target:
        target.gate.shut()

        def request() -> None:
            with contextlib.suppress(OSError):  # beyond the cap: shed (503) or closed
                target.request()

        flood = [threading.Thread(target=request) for _ in range(target.cap + 8)]
        for thread in flood:
            thread.start()
        idle = [connect(target.port) for _ in range(20)]
        try:
            deadline = time.monotonic() + 10
            while target.gate.waiting < min(target.cap, MAX_REQUESTS):
                assert time.monotonic() < deadline, "the flood never filled the threads"
                time.sleep(0.01)
            assert target.probe is not None
            assert [target.probe() for _ in range(5)] == [200] * 5
        finally:
            target.gate.open()
            for thread in flood:
                thread.join(10)
            for sock in idle:
                sock.close()


MALFORMED = {
    "content-length-abc": b"POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
    "content-length-twice": b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
    "content-length-huge": b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n",
    "chunked": b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "request-line": b"\x16\x03\x01 not http\r\n\r\n",
    "headers-too-large": b"GET / HTTP/1.1\r\nX: " + b"a" * 70_000 + b"\r\n\r\n",
}


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_request_gets_4xx_and_no_traceback(
    target: Listener, case: str, capfd: pytest.CaptureFixture[str]
) -> None:
    with connect(target.port) as sock:
        with contextlib.suppress(OSError):  # the answer may come before all was sent
            sock.sendall(MALFORMED[case])
        status = answer_status(sock)
    assert 400 <= status < 500, status
    served(target, times=1)
    captured = capfd.readouterr()
    assert "Traceback" not in captured.out + captured.err


def test_the_slack_intake_acknowledges_a_burst_before_any_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with listener("slack", monkeypatch) as target:
        target.gate.shut()  # the work (recording each click) cannot start
        statuses: list[int] = []

        def press(n: int) -> None:
            statuses.append(post_click(target.port, n))

        burst = [threading.Thread(target=press, args=(n,)) for n in range(300)]
        for thread in burst:
            thread.start()
        for thread in burst:
            thread.join(30)
        assert statuses == [200] * 300  # every click acknowledged, none of them taken yet
        assert target.taken == []
        target.gate.open()
        deadline = time.monotonic() + 20
        while len(target.taken) < 300:
            assert time.monotonic() < deadline, f"{len(target.taken)} of 300 clicks taken"
            time.sleep(0.02)
