"""The controller's HTTP endpoint, over real loopback sockets: the ``web:`` settings give
basic or bearer auth (probes stay open), failed logins are limited, half-open requests
are cut at the deadline instead of holding threads, and TLS works."""

from __future__ import annotations

import base64
import contextlib
import shutil
import socket
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest

from guardian.adapters.status_api import fetch_status
from guardian.app.http_api import EngineHTTPServer, web_guard
from guardian.app.rules.runtime import RuleEngine
from guardian.app.settings.config_file import parse_settings
from guardian.app.settings.web import WebSettings
from guardian.model.query import QueryResult
from guardian_common.errors import ConfigError, PermanentError


def engine() -> RuleEngine:
    def query(_expr: str, _ts: float) -> QueryResult:
        return QueryResult(())

    return RuleEngine([], query)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[EngineHTTPServer] = []

    def start(web: WebSettings) -> str:
        server = EngineHTTPServer(engine(), "127.0.0.1", 0, web_guard(web))
        server.start()
        servers.append(server)
        host, port = server.address
        return f"{server.scheme}://{host}:{port}"

    yield start
    for server in servers:
        server.stop()


def get(
    url: str, headers: dict[str, str] | None = None, context: ssl.SSLContext | None = None
) -> tuple[int, Any]:
    request = urllib.request.Request(url, headers=headers or {})  # noqa: S310 - loopback
    try:
        with urllib.request.urlopen(request, timeout=15, context=context) as response:  # noqa: S310
            response.read()
            return response.status, response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def users_file(tmp_path: Path) -> Path:
    hashed = bcrypt.hashpw(b"s3cret", bcrypt.gensalt(rounds=4)).decode()
    path = tmp_path / "users.yaml"
    path.write_text(f"basic_auth_users:\n  prom: '{hashed}'\n")
    return path


def test_without_web_settings_everything_is_open(serve: Any) -> None:
    url = serve(WebSettings())
    assert get(url + "/api/v1/alerts")[0] == 200
    assert get(url + "/metrics")[0] == 200
    assert get(url + "/nope")[0] == 404


def test_basic_and_bearer_auth_with_open_probes(
    serve: Any, users_file: Path, tmp_path: Path
) -> None:
    token = tmp_path / "token"
    token.write_text("prometheus-token-1\n")
    url = serve(WebSettings(basic_auth_users_file=str(users_file), bearer_token_file=str(token)))
    status, headers = get(url + "/api/v1/alerts")
    assert status == 401
    assert headers.get_all("WWW-Authenticate") == [
        'Basic realm="gpu-guardian"',
        'Bearer realm="gpu-guardian"',
    ]
    assert get(url + "/api/v1/alerts", basic("prom", "wrong"))[0] == 401
    assert get(url + "/api/v1/alerts", basic("prom", "s3cret"))[0] == 200
    assert get(url + "/metrics", {"Authorization": "Bearer prometheus-token-1"})[0] == 200
    assert get(url + "/metrics", {"Authorization": "Bearer other"})[0] == 401
    assert get(url + "/nope")[0] == 401  # nothing is revealed without credentials
    assert get(url + "/healthz")[0] == 200
    assert get(url + "/readyz")[0] == 200  # no groups: ready at once


def test_failed_logins_are_limited(serve: Any, users_file: Path) -> None:
    url = serve(WebSettings(basic_auth_users_file=str(users_file), auth_failures_per_minute=1))
    assert get(url + "/metrics", basic("prom", "guess1"))[0] == 401
    status, headers = get(url + "/metrics", basic("prom", "guess2"))
    assert (status, headers["Retry-After"]) == (429, "60")
    assert get(url + "/healthz")[0] == 200


def test_fifty_half_open_requests_do_not_hold_the_endpoint(serve: Any) -> None:
    url = serve(WebSettings(max_connections=8, request_timeout=0.3))
    host, port = url.removeprefix("http://").rsplit(":", 1)
    held = [socket.create_connection((host, int(port))) for _ in range(50)]
    for sock in held[::2]:
        sock.sendall(b"GET /api/v1/alerts HTTP/1.1\r\nHost: x\r\n")  # never finished
    try:
        assert get(url + "/healthz")[0] == 200
        for sock in held:
            sock.settimeout(15)
            with contextlib.suppress(ConnectionResetError):  # reset: closed, too
                assert sock.recv(1024) == b""  # closed by the server, unanswered
    finally:
        for sock in held:
            sock.close()


def test_tls(serve: Any, tmp_path: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("openssl is not installed, so no test certificate can be made")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    argv = [openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run([*argv, "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    url = serve(WebSettings(tls_cert_file=str(cert), tls_key_file=str(key)))
    assert url.startswith("https://")
    assert get(url + "/healthz", context=ssl.create_default_context(cafile=str(cert)))[0] == 200
    with pytest.raises(OSError, match=r"reset|Remote end closed|EOF|Bad"):
        get(url.replace("https", "http") + "/healthz")


def test_web_section_in_the_config_file(tmp_path: Path, users_file: Path) -> None:
    text = f"""
prometheus: {{url: http://prom:9090}}
rule_files: [r.yaml]
listen_address: "[::1]:9469"
web:
  basic_auth_users_file: {users_file.name}
  max_connections: 16
  request_timeout: 5s
"""
    settings = parse_settings(text, str(tmp_path / "guardian.yaml"))
    assert settings.listen_host_port == ("::1", 9469)
    assert settings.web.basic_auth_users_file == str(users_file)  # relative to the config
    assert settings.web.request_timeout == 5.0
    guard = web_guard(settings.web)
    assert guard.auth.enabled
    assert guard.limits.max_connections == 16
    with pytest.raises(ConfigError, match="tls_key_file"):
        parse_settings(text + "  tls_cert_file: c.pem\n", str(tmp_path / "guardian.yaml"))


def test_a_missing_users_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read users file"):
        web_guard(WebSettings(basic_auth_users_file=str(tmp_path / "nope.yaml")))


def test_served_on_ipv6_loopback_when_asked() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    try:
        server = EngineHTTPServer(engine(), "::1", 0)
    except OSError:
        pytest.skip("IPv6 loopback is not configured here")
    server.start()
    try:
        assert get(f"http://[::1]:{server.address[1]}/healthz")[0] == 200
    finally:
        server.stop()


def test_stop_returns_while_requests_are_held() -> None:
    server = EngineHTTPServer(engine(), "127.0.0.1", 0, web_guard(WebSettings(max_connections=1)))
    server.start()
    held = socket.create_connection(server.address)
    done = threading.Event()

    def stop() -> None:
        server.stop()
        done.set()

    threading.Thread(target=stop, daemon=True).start()
    assert done.wait(10)
    held.close()


def test_status_needs_credentials_and_guardian_status_sends_them_from_the_url(
    users_file: Path,
) -> None:
    guard = web_guard(WebSettings(basic_auth_users_file=str(users_file)))
    server = EngineHTTPServer(engine(), "127.0.0.1", 0, guard, status=lambda: {"alerts": []})
    server.start()
    try:
        host, port = server.address
        assert get(f"http://{host}:{port}/api/v1/status")[0] == 401
        assert fetch_status(f"http://prom:s3cret@{host}:{port}") == {"alerts": []}
        with pytest.raises(PermanentError, match="HTTP 401") as info:
            fetch_status(f"http://prom:wrong-pw@{host}:{port}")
        assert "wrong-pw" not in str(info.value)
    finally:
        server.stop()
