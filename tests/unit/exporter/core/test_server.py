"""The HTTP server: routes, concurrency cap, basic auth and TLS, over real loopback sockets."""

from __future__ import annotations

import base64
import gzip
import shutil
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from exporter.app.collection import SnapshotStore
from exporter.app.metrics import RenderedSnapshot
from exporter.app.server import ExporterApp, HttpServer
from exporter.model.snapshot import ExporterHealth, empty_snapshot
from guardian_common.http_auth import Authenticator
from guardian_common.http_server import ServerTls

HEALTH = ExporterHealth(
    nvml_up=False, last_success_timestamp_seconds=None, stage_seconds=(), errors=()
)


def published() -> SnapshotStore:
    store = SnapshotStore()
    store.publish(RenderedSnapshot(empty_snapshot("n", HEALTH, 1.0)))
    return store


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[HttpServer] = []

    def start(app: ExporterApp, tls: ServerTls | None = None) -> str:
        server = HttpServer(app, "127.0.0.1", 0, tls=tls)
        server.start()
        servers.append(server)
        scheme = "https" if tls else "http"
        return f"{scheme}://127.0.0.1:{server.port}"

    yield start
    for s in servers:
        s.stop()


def get(
    url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback test URL
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:  # noqa: S310
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_routes(serve: Any) -> None:
    store = SnapshotStore()
    url = serve(ExporterApp(store, max_requests=2))
    assert get(url + "/healthz") == (200, "ok\n")
    assert get(url + "/readyz")[0] == 503  # no snapshot yet
    assert get(url + "/metrics")[0] == 503
    store.publish(RenderedSnapshot(empty_snapshot("n", HEALTH, 1.0)))
    assert get(url + "/readyz")[0] == 200
    status, body = get(url + "/metrics")
    assert status == 200
    assert 'guardian_exporter_nvml_up{node="n"} 0.0' in body
    assert get(url + "/nope")[0] == 404
    request = urllib.request.Request(url + "/metrics", headers={"Accept-Encoding": "gzip"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        assert response.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(response.read()).decode() == body


def test_health_reflects_the_collector(serve: Any) -> None:
    url = serve(ExporterApp(published(), max_requests=1, healthy=lambda: False))
    assert get(url + "/healthz")[0] == 503


def test_concurrent_scrapes_beyond_the_cap_get_503() -> None:
    store = published()
    app = ExporterApp(store, max_requests=1)
    release = threading.Event()
    entered = threading.Event()
    assert store.current is not None
    original = store.current.body

    def slow_body(accept: str | None, gzipped: bool = False) -> tuple[bytes, str]:
        entered.set()
        release.wait(10)
        return original(accept, gzipped)

    store.current.body = slow_body  # type: ignore[method-assign]
    statuses: list[str] = []

    def scrape() -> None:
        app({"PATH_INFO": "/metrics"}, lambda status, headers: statuses.append(status))

    first = threading.Thread(target=scrape)
    first.start()
    assert entered.wait(10)
    scrape()  # the second concurrent scrape
    release.set()
    first.join(10)
    assert sorted(statuses) == ["200 OK", "503 Service Unavailable"]


def test_basic_auth(serve: Any, tmp_path: Path) -> None:
    users = {"prom": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4))}
    url = serve(ExporterApp(published(), max_requests=2, auth=Authenticator(users)))

    def auth(user: str, password: str) -> dict[str, str]:
        return {
            "Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        }

    assert get(url + "/metrics")[0] == 401
    assert get(url + "/metrics", auth("prom", "wrong"))[0] == 401
    assert get(url + "/metrics", auth("nobody", "s3cret"))[0] == 401
    assert get(url + "/metrics", {"Authorization": "Basic !!!"})[0] == 401
    assert get(url + "/metrics", auth("prom", "s3cret"))[0] == 200
    assert get(url + "/healthz")[0] == 200  # probes need no credentials


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed, so no test certificate can be made")
    d = tmp_path_factory.mktemp("tls")
    cert, key = d / "cert.pem", d / "key.pem"
    argv = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([*argv, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def test_tls(serve: Any, certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    tls = ServerTls(cert, key, field="--tls-cert-file")
    url = serve(ExporterApp(published(), max_requests=2), tls)
    context = ssl.create_default_context(cafile=str(cert))
    status, body = get(url + "/metrics", context=context)
    assert status == 200
    assert "guardian_exporter_nvml_up" in body
    with pytest.raises(OSError, match=r"reset|Remote end closed|EOF|Bad"):  # plain HTTP: no answer
        get(url.replace("https", "http") + "/metrics")
    # A client that never finishes its handshake does not block other scrapes.
    with socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1]))):
        assert get(url + "/healthz", context=context)[0] == 200


def get_with_headers(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback test URL
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            return response.status, response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


def test_over_the_cap_503_with_retry_after_while_probes_still_answer(serve: Any) -> None:
    store = published()
    assert store.current is not None
    original = store.current.body
    entered, release = threading.Event(), threading.Event()

    def slow_body(accept: str | None, gzipped: bool = False) -> tuple[bytes, str]:
        entered.set()
        release.wait(10)
        return original(accept, gzipped)

    store.current.body = slow_body  # type: ignore[method-assign]
    url = serve(ExporterApp(store, max_requests=1))
    first: list[int] = []
    scrape = threading.Thread(target=lambda: first.append(get(url + "/metrics")[0]))
    scrape.start()
    assert entered.wait(10)
    status, headers = get_with_headers(url + "/metrics")
    assert (status, headers["Retry-After"]) == (503, "1")
    assert get(url + "/healthz")[0] == 200  # probes count against no cap
    assert get(url + "/readyz")[0] == 200
    release.set()
    scrape.join(10)
    assert first == [200]
    store.current.body = original  # type: ignore[method-assign]
    # Each finished response gave its slot back: a lost slot would answer 503 for good.
    # The slot returns when the server's handler ends, which may come just after the
    # client has read the body, so a 503 in that moment is retried.
    assert [_admitted(url + "/metrics") for _ in range(5)] == [200] * 5


def _admitted(url: str, within: float = 5.0) -> int:
    deadline = time.monotonic() + within
    status = get(url)[0]
    while status == 503 and time.monotonic() < deadline:
        time.sleep(0.01)
        status = get(url)[0]
    return status


def test_failed_logins_get_429_with_retry_after(serve: Any) -> None:
    users = {"prom": bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4))}
    auth = Authenticator(users, failures_per_minute=2)
    url = serve(ExporterApp(published(), max_requests=4, auth=auth))

    def basic(password: str) -> dict[str, str]:
        return {"Authorization": "Basic " + base64.b64encode(f"prom:{password}".encode()).decode()}

    assert get(url + "/metrics", basic("s3cret"))[0] == 200
    assert [get(url + "/metrics", basic(f"guess{n}"))[0] for n in range(2)] == [401, 401]
    status, headers = get_with_headers(url + "/metrics", basic("guess3"))
    assert status == 429
    assert int(headers["Retry-After"]) == 30  # 2 a minute: one more try in 30 s
    assert get(url + "/metrics", basic("s3cret"))[0] == 200  # the scraper is not locked out
    assert get(url + "/healthz")[0] == 200
