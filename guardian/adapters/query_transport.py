"""A keep-alive HTTP/1.1 client for the query API, on the standard library's http.client.

Rule templates send a query per alert, thousands a cycle. Through ``requests`` each cost
about 1 ms of our CPU (session settings merged per call, the long URL parsed and
re-encoded three times); here about 0.15 ms. What ``requests`` resolved for us is resolved
once per target, with its own functions, so the environment means what it meant:
``HTTP(S)_PROXY``/``NO_PROXY``, ``REQUESTS_CA_BUNDLE``/``CURL_CA_BUNDLE``, netrc, and the
URL's userinfo as basic auth (configured credentials first, then userinfo, then netrc).

- Connections are kept and reused, up to ``POOL_SIZE`` idle ones. A kept connection the
  server closed is replaced once; a refused or failed connect is tried once more.
  Nothing else is retried: a read timeout or a 503 means the query is too heavy now.
- ``timeout`` bounds the connect and every read, as ``requests``' ``timeout`` did.
- Proxies: ``http://`` ones (plain requests or a CONNECT tunnel for https). Others are
  refused at the first request with a message saying so.
- Redirects are not followed: a query API that redirects is misconfigured, and following
  one would send the credentials to another address.
"""

from __future__ import annotations

import gzip
import http.client
import ssl
import threading
import weakref
from contextlib import ExitStack
from dataclasses import dataclass
from urllib.parse import unquote, urlencode, urlsplit

import requests

from guardian.adapters.http_credentials import authorization, basic
from guardian.model.http_client import HttpClientConfig
from guardian_common.files import CERTIFICATE, FileReadError, pinned_path
from guardian_common.redact import Secrets

POOL_SIZE = 64  # idle connections kept per target (concurrent rules and template queries)
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


class TransportError(Exception):
    """No answer: the connection failed, or (``timeout``) the connect or a read timed out."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    retry_after: str | None


@dataclass(frozen=True)
class _Route:
    """Where a connection goes and what the request line names."""

    https: bool
    host: str
    port: int
    base_path: str
    proxy: tuple[str, int, bool] | None  # (host, port, TLS to the proxy)
    proxy_auth: str | None
    proxy_error: str | None  # a proxy we cannot use, said at the first request
    origin: str = ""  # what a plain-http proxy's request line starts with


def _userinfo_auth(username: str | None, password: str | None) -> str | None:
    """Basic auth from a URL's userinfo; None when it has none."""
    if username is None and password is None:
        return None
    return basic(unquote(username or ""), unquote(password or ""))


def _route(url: str, proxy_url: str | None) -> _Route:
    parts = urlsplit(url)
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    host = parts.hostname or ""
    base = parts.path.rstrip("/")
    if not proxy_url:
        return _Route(https, host, port, base, None, None, None)
    proxy = urlsplit(proxy_url if "://" in proxy_url else f"http://{proxy_url}")
    if proxy.scheme not in ("http", "https") or (proxy.scheme == "https" and https):
        error = f"a {proxy.scheme}:// proxy is not supported for {parts.scheme}:// targets"
        return _Route(https, host, port, base, None, None, error)
    proxy_tls = proxy.scheme == "https"
    at = (proxy.hostname or "", proxy.port or (443 if proxy_tls else 80), proxy_tls)
    shown_host = f"[{host}]" if ":" in host else host  # an IPv6 literal keeps its brackets
    auth = _userinfo_auth(proxy.username, proxy.password)
    return _Route(https, host, port, base, at, auth, None, f"http://{shown_host}:{port}")


def _netrc_auth(url: str) -> str | None:
    found = requests.utils.get_netrc_auth(url)
    return basic(found[0], found[1]) if found else None


def _tls_context(verify: bool | str, cert: str | tuple[str, str] | None) -> ssl.SSLContext:
    """The client context. Each file is checked by the bounded reader first and handed
    to ``ssl`` pinned (:func:`pinned_path`): a FIFO or ``/dev/zero`` in its place raises
    FileReadError instead of blocking or reading forever."""
    if verify is False:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        bundle = verify if isinstance(verify, str) else requests.utils.DEFAULT_CA_BUNDLE_PATH
        if bundle.endswith("/"):  # a directory of hashed names, read per certificate
            context = ssl.create_default_context(capath=bundle)
        else:
            with pinned_path(bundle, CERTIFICATE) as cafile:
                context = ssl.create_default_context(cafile=cafile)
    if cert is not None:
        certfile, keyfile = (cert, None) if isinstance(cert, str) else cert
        with ExitStack() as files:
            pinned = files.enter_context(pinned_path(certfile, CERTIFICATE))
            key = (
                None if keyfile is None else files.enter_context(pinned_path(keyfile, CERTIFICATE))
            )
            context.load_cert_chain(pinned, key)
    return context


class QueryTransport:
    """Requests to one target, from any thread."""

    def __init__(
        self, config: HttpClientConfig, secrets: Secrets, *, trust_env: bool = True
    ) -> None:
        self._http = config
        self._secrets = secrets
        proxy: str | None = None
        self._verify: bool | str = config.tls.verify
        if trust_env:  # the environment's proxy and CA bundle, as requests resolves them
            env = requests.Session().merge_environment_settings(
                config.url, {}, None, config.tls.verify, config.tls.cert
            )
            proxy = requests.utils.select_proxy(config.url, env["proxies"])
            self._verify = env["verify"]
        self._route = _route(config.url, proxy)
        parts = urlsplit(config.url)
        self._fallback_auth = _userinfo_auth(parts.username, parts.password) or (
            _netrc_auth(config.url) if trust_env else None
        )
        self._headers = {
            "User-Agent": "gpu-guardian",
            "Accept": "application/json",
            "Accept-Encoding": "gzip",
            **config.headers,
        }
        self._tls: ssl.SSLContext | None = None
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()
        self._closed = False
        # A transport dropped without close() still closes its kept connections.
        weakref.finalize(self, _close_all, self._idle)

    def request(self, method: str, path: str, params: dict[str, str]) -> Reply:
        """``method`` ``<base path>/<path>`` with ``params`` (the query string for GET, a
        form body for POST). Raises TransportError, or CredentialError from a secret file."""
        route = self._route
        if route.proxy_error is not None:
            raise TransportError(route.proxy_error)
        headers = dict(self._headers)
        auth = authorization(self._http, self._secrets) or self._fallback_auth
        if auth is not None:
            headers["Authorization"] = auth
        target, body = f"{route.base_path}/{path}", None
        if method == "GET":
            target += f"?{urlencode(params)}" if params else ""
        else:
            body = urlencode(params).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if route.proxy is not None and not route.https:
            target = route.origin + target  # a proxy takes the whole URL
            if route.proxy_auth is not None:
                headers["Proxy-Authorization"] = route.proxy_auth
        return self._exchange(method, target, body, headers)

    def _exchange(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> Reply:
        conn, kept = self._take()
        try:
            conn.request(method, target, body, headers)
            response = conn.getresponse()
            data = response.read()
        except TimeoutError:
            conn.close()
            raise TransportError(f"timed out after {self._http.timeout}s", timeout=True) from None
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            if kept and isinstance(exc, _STALE):  # the server closed a kept connection
                return self._exchange(method, target, body, headers)
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        if response.will_close:
            conn.close()
        else:
            self._give(conn)
        if response.getheader("Content-Encoding") == "gzip":
            try:
                data = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                raise TransportError(f"bad gzip body: {exc}") from None
        return Reply(response.status, data, response.getheader("Retry-After"))

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        try:
            return self._connected(), False
        except TransportError as exc:
            if exc.timeout:
                raise
            return self._connected(), False  # one more try after a failed connect, as before

    def _connected(self) -> http.client.HTTPConnection:
        conn = self._new()
        try:
            conn.connect()
        except TimeoutError:
            conn.close()
            raise TransportError(
                f"connect timed out after {self._http.timeout}s", timeout=True
            ) from None
        except OSError as exc:
            conn.close()
            raise TransportError(f"{type(exc).__name__}: {exc}") from None
        return conn

    def _new(self) -> http.client.HTTPConnection:
        route, timeout = self._route, self._http.timeout
        host, port = route.host, route.port
        if route.proxy is not None:
            host, port, proxy_tls = route.proxy
            if route.https:  # a CONNECT tunnel through an http:// proxy
                conn = http.client.HTTPSConnection(
                    host, port, timeout=timeout, context=self._context()
                )
                headers = {"Proxy-Authorization": route.proxy_auth} if route.proxy_auth else None
                conn.set_tunnel(route.host, route.port, headers=headers)
                return conn
            if proxy_tls:
                return http.client.HTTPSConnection(
                    host, port, timeout=timeout, context=ssl.create_default_context()
                )
            return http.client.HTTPConnection(host, port, timeout=timeout)
        if route.https:
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=self._context())
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def _context(self) -> ssl.SSLContext:
        # Built at the first TLS connect, so an unreadable file fails a query (and is
        # tried again at the next), not the start.
        if self._tls is None:
            try:
                self._tls = _tls_context(self._verify, self._http.tls.cert)
            except FileReadError as exc:
                raise TransportError(f"TLS setup: {exc}") from None
            except (OSError, ssl.SSLError) as exc:
                raise TransportError(f"TLS setup: {type(exc).__name__}: {exc}") from None
        return self._tls

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < POOL_SIZE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            idle = self._idle[:]
            self._idle.clear()
        _close_all(idle)


def _close_all(connections: list[http.client.HTTPConnection]) -> None:
    for conn in connections:
        conn.close()
