"""The query transport on the wire: kept connections, a connection the server dropped,
forward proxies, the URL's userinfo, gzip, TLS with a client certificate, no redirects."""

from __future__ import annotations

import gzip
import json
import os
import select
import socket
import ssl
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.prometheus import (
    PrometheusAccess,
    PrometheusQuerier,
    QueryFailedError,
    QueryRejectedError,
)
from guardian.model.http_client import BasicAuthConfig, HttpClientConfig, TlsConfig
from tests.plugins.loopback_http import loopback_server, serve_in_thread
from tests.plugins.pki_fixture import Pki

ANSWER = {
    "status": "success",
    "data": {"resultType": "vector", "result": [{"metric": {"a": "1"}, "value": [0, "2"]}]},
}


@dataclass
class Seen:
    """What the server was sent, and how to answer."""

    lines: list[str] = field(default_factory=list)  # request lines' targets
    headers: list[dict[str, str]] = field(default_factory=list)
    connections: int = 0
    close_after_reply: bool = False  # drop the connection without saying so
    gzip: bool = False
    redirect: str | None = None


class _Server:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        seen = self.seen = Seen()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                seen.connections += 1
                super().setup()

            def do_GET(self) -> None:
                seen.lines.append(self.path)
                seen.headers.append({k.lower(): v for k, v in self.headers.items()})
                if seen.redirect is not None:
                    self.send_response(302)
                    self.send_header("Location", seen.redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = json.dumps(ANSWER).encode()
                self.send_response(200)
                if seen.gzip:
                    body = gzip.compress(body)
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                if seen.close_after_reply:
                    self.close_connection = True

            def do_CONNECT(self) -> None:  # a forward proxy's tunnel: bytes both ways
                seen.lines.append(f"CONNECT {self.path}")
                seen.headers.append({k.lower(): v for k, v in self.headers.items()})
                host, _, port = self.path.rpartition(":")
                upstream = socket.create_connection((host, int(port)), timeout=5)
                self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                self.wfile.flush()
                ends = [self.connection, upstream]
                while True:
                    ready, _, _ = select.select(ends, [], [], 5)
                    chunks = [(end, end.recv(65536)) for end in ready]
                    if not ready or any(not data for _, data in chunks):
                        break
                    for end, data in chunks:
                        (upstream if end is self.connection else self.connection).sendall(data)
                upstream.close()
                self.close_connection = True

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server, self.url = loopback_server(Handler, tls)
        self.port = self.server.server_address[1]
        self.stop = serve_in_thread(self.server)


@pytest.fixture
def serve() -> Iterator[Any]:
    servers: list[_Server] = []

    def start(tls: ssl.SSLContext | None = None) -> _Server:
        servers.append(_Server(tls))
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def querier(url: str, **config: Any) -> PrometheusQuerier:
    return PrometheusQuerier(PrometheusAccess(HttpClientConfig(url, timeout=5, **config)))


def use_proxy(monkeypatch: pytest.MonkeyPatch, variable: str, url: str) -> None:
    """The environment names ``url`` as the proxy (both spellings) and bypasses nothing."""
    for name in (variable, variable.upper()):
        monkeypatch.setenv(name, url)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def test_queries_reuse_one_kept_connection(serve: Any) -> None:
    server = serve()
    q = querier(server.url)
    for n in range(20):
        assert q.query("m", n).samples[0].value == 2.0
    q.close()
    assert server.seen.connections == 1
    assert server.seen.lines[0] == "/api/v1/query?query=m&time=0.000"


def test_a_connection_the_server_dropped_is_replaced(serve: Any) -> None:
    server = serve()
    server.seen.close_after_reply = True  # no "Connection: close": the client finds out later
    q = querier(server.url)
    for n in range(5):
        assert q.query("m", n).samples[0].value == 2.0
    q.close()
    assert server.seen.connections == 5
    assert len(server.seen.lines) == 5  # each query sent once


@pytest.mark.parametrize(
    ("userinfo", "url", "line", "proxy_auth"),
    [
        (
            "pu:pp@",
            "http://prom.example:9090/prefix/",
            "http://prom.example:9090/prefix/api/v1/query?query=up&time=0.000",
            "Basic cHU6cHA=",  # pu:pp
        ),
        (  # an IPv6 literal keeps its brackets (found on review; failed first)
            "",
            "http://[fd00::1]:9090",
            "http://[fd00::1]:9090/api/v1/query?query=up&time=0.000",
            None,
        ),
    ],
)
def test_the_environments_http_proxy_gets_the_whole_url_and_its_credentials(
    serve: Any,
    monkeypatch: pytest.MonkeyPatch,
    userinfo: str,
    url: str,
    line: str,
    proxy_auth: str | None,
) -> None:
    proxy = serve()
    use_proxy(monkeypatch, "http_proxy", f"http://{userinfo}127.0.0.1:{proxy.port}")
    q = querier(url)
    q.query("up", 0)
    q.close()
    assert proxy.seen.lines == [line]
    assert proxy.seen.headers[0].get("proxy-authorization") == proxy_auth


def test_a_socks_proxy_is_refused_with_a_message(monkeypatch: pytest.MonkeyPatch) -> None:
    use_proxy(monkeypatch, "http_proxy", "socks5://127.0.0.1:1080")
    with pytest.raises(QueryFailedError, match="socks5:// proxy is not supported") as info:
        querier("http://prom.example:9090").query("up", 0)
    assert info.value.reason == "connection"


def test_userinfo_is_basic_auth_unless_credentials_are_configured(serve: Any) -> None:
    server = serve()
    url = server.url.replace("://", "://u%40x:p%3Aw@")
    querier(url).query("m", 0)
    querier(url, basic_auth=BasicAuthConfig("c", "d")).query("m", 0)
    assert [h["authorization"] for h in server.seen.headers] == [
        "Basic dUB4OnA6dw==",  # u@x:p:w, unquoted
        "Basic Yzpk",  # c:d
    ]
    assert all("@" not in h["host"] for h in server.seen.headers)


def test_a_gzip_answer_is_decoded(serve: Any) -> None:
    server = serve()
    server.seen.gzip = True
    assert querier(server.url).query("m", 0).samples[0].value == 2.0
    assert server.seen.headers[0]["accept-encoding"] == "gzip"


def test_a_redirect_is_not_followed(serve: Any) -> None:
    server, elsewhere = serve(), serve()
    server.seen.redirect = f"{elsewhere.url}/api/v1/query"
    with pytest.raises(QueryRejectedError, match="HTTP 302") as info:
        querier(server.url).query("m", 0)
    assert info.value.reason == "http_error"
    assert elsewhere.seen.lines == []


def test_https_goes_through_the_proxys_tunnel(
    serve: Any, pki: Pki, monkeypatch: pytest.MonkeyPatch
) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    server, proxy = serve(context), serve()
    use_proxy(monkeypatch, "https_proxy", f"http://pu:pp@127.0.0.1:{proxy.port}")
    q = querier(server.url, tls=TlsConfig(ca_file=pki.ca))
    assert [q.query("m", n).samples[0].value for n in range(2)] == [2.0] * 2
    q.close()
    assert proxy.seen.lines == [f"CONNECT 127.0.0.1:{server.port}"]  # one tunnel, kept
    assert proxy.seen.headers[0]["proxy-authorization"] == "Basic cHU6cHA="
    assert server.seen.lines == [
        "/api/v1/query?query=m&time=0.000",
        "/api/v1/query?query=m&time=1.000",
    ]


def test_tls_with_the_configured_ca_and_a_client_certificate(serve: Any, pki: Pki) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    context.load_verify_locations(pki.ca)
    context.verify_mode = ssl.CERT_REQUIRED
    server = serve(context)
    tls = TlsConfig(ca_file=pki.ca, cert_file=pki.client_cert, key_file=pki.client_key)
    q = querier(server.url, tls=tls)
    assert [q.query("m", n).samples[0].value for n in range(3)] == [2.0] * 3
    q.close()
    assert server.seen.connections == 1

    untrusted = querier(
        server.url, tls=TlsConfig(cert_file=pki.client_cert, key_file=pki.client_key)
    )
    with pytest.raises(QueryFailedError, match="CERTIFICATE_VERIFY_FAILED") as info:
        untrusted.query("m", 0)
    assert info.value.reason == "connection"
    untrusted.close()


def test_a_tls_file_turned_into_a_fifo_fails_the_query_without_blocking(
    serve: Any, pki: Pki, tmp_path: Path
) -> None:
    """The files go to ssl through the bounded reader: a FIFO in place of the key is one
    failed query (tried again at the next), never a connect that blocks forever."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.server_cert, pki.server_key)
    server = serve(context)
    key = tmp_path / "client.key"
    os.mkfifo(key)
    tls = TlsConfig(ca_file=pki.ca, cert_file=pki.client_cert, key_file=key)
    q = querier(server.url, tls=tls)
    with pytest.raises(QueryFailedError, match=r"client\.key: not a regular file \(a FIFO\)"):
        q.query("m", 0)
    key.unlink()
    key.write_bytes(pki.client_key.read_bytes())
    assert q.query("m", 0).samples[0].value == 2.0
    q.close()
