"""Keep credentials out of log lines, exception messages and command output.

- :func:`redact_url`: one URL without its userinfo and secret query values, for messages.
- :func:`scrub`: the same for every URL inside any text (a library's exception message).
- :class:`Secrets`: known values (passwords, tokens, webhook URLs) replaced in any text.
- :class:`Secret`: one such value whose ``str()`` and ``repr()`` never show it.
- :class:`RedactFilter`: a logging filter that scrubs every record (message and traceback);
  ``guardian_common.logs.configure_logging`` installs one on the process's handler.

Values shorter than :data:`MIN_SECRET_LENGTH` are not replaced in free text: they would
mangle every message that happens to contain them, and are guessable anyway.
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from collections import OrderedDict
from urllib.parse import SplitResult, parse_qsl, quote, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4
_MAX_REMEMBERED = 32  # rotated token files add a value each time; keep the recent ones

# Query parameters whose values are credentials in the URLs people paste into configs.
_CREDENTIAL_PARAMS = (
    "access_token|api_key|apikey|api-key|auth|auth_token|client_secret|key|password|passwd"
    "|pwd|secret|sig|signature|token|x-amz-signature|x-amz-credential|x-goog-signature"
)
# scheme://userinfo@ : the userinfo runs to the last "@" before the path, query or end.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#'\"<>]*@")
_QUERY_SECRET = re.compile(rf"(?i)([?&;](?:{_CREDENTIAL_PARAMS})=)[^&;#\s'\"<>]*")
_CREDENTIAL_PARAM = re.compile(rf"(?i){_CREDENTIAL_PARAMS}")


def redact_url(url: str) -> str:
    """``url`` as it may be shown: userinfo (user and password) and secret query values
    replaced by ``[redacted]``, everything else as written."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return scrub(url)
    if "@" not in parts.netloc and not _QUERY_SECRET.search("?" + parts.query):
        return url
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rpartition('@')[2]}"
    query = _QUERY_SECRET.sub(rf"\1{REDACTED}", "?" + parts.query)[1:]
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def scrub(text: str) -> str:
    """``text`` with the userinfo and secret query values of every URL in it redacted."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(rf"\1{REDACTED}@", text)
    return _QUERY_SECRET.sub(rf"\1{REDACTED}", text)


class Secret:
    """A token or webhook URL: ``str()`` and ``repr()`` never show it."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value.strip()

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with the value (and, for a URL, its path) replaced."""
        return Secrets(self).scrub(text)

    def __repr__(self) -> str:
        return f"Secret({REDACTED})"

    __str__ = __repr__


class Secrets:
    """Known secret values, replaced by ``[redacted]`` in any text; thread-safe.

    Each value is also known in the forms it travels in: percent-encoded (in a URL), and
    for a URL its path and query (a webhook's path *is* the secret, and libraries log
    paths without the host). :meth:`add_basic` adds the ``Authorization`` header value.
    """

    def __init__(self, *values: str | Secret | None) -> None:
        self._fixed: set[str] = set()
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._lock = threading.Lock()
        for value in values:
            self._fixed.update(_forms(value))

    def add(self, value: str | Secret | None) -> None:
        """Remember a value read at run time (a rotated token): the most recent ones."""
        with self._lock:
            for form in _forms(value):
                self._recent[form] = None
                self._recent.move_to_end(form)
            while len(self._recent) > _MAX_REMEMBERED:
                self._recent.popitem(last=False)

    def add_url_credentials(self, url: str | None) -> None:
        """The credentials inside ``url`` (password, credential query values), for a URL
        that is itself no secret (a Prometheus or an API server address)."""
        parts = _split(url or "")
        if parts is not None:
            with self._lock:
                self._fixed.update(_credential_forms(parts))

    def add_basic(self, username: str, password: str) -> None:
        self.add(password)
        self.add(base64.b64encode(f"{username}:{password}".encode()).decode())

    def scrub(self, text: str) -> str:
        with self._lock:
            values = sorted({*self._fixed, *self._recent}, key=len, reverse=True)
        for value in values:
            text = text.replace(value, REDACTED)
        return scrub(text)


def _forms(value: str | Secret | None) -> list[str]:
    """``value`` as written and percent-encoded; for a URL also its path and query (a
    whole URL that is secret is secret in parts too) and its credentials."""
    if value is None:
        return []
    text = value.reveal() if isinstance(value, Secret) else value.strip()
    if len(text) < MIN_SECRET_LENGTH:
        return []
    forms = {text, quote(text, safe=""), quote(text, safe="/:")}
    parts = _split(text)
    if parts is not None:
        tail = parts.path + (f"?{parts.query}" if parts.query else "")
        if len(parts.path.strip("/")) >= MIN_SECRET_LENGTH:
            forms.update({tail, parts.path})
        forms.update(_credential_forms(parts))
    return [f for f in forms if len(f) >= MIN_SECRET_LENGTH]


def _split(text: str) -> SplitResult | None:
    try:
        return urlsplit(text) if "://" in text else None
    except ValueError:  # not a URL after all
        return None


def _credential_forms(parts: SplitResult) -> list[str]:
    """The password of a URL (as typed, decoded, and as the Basic header that carries
    it) and the values of its credential query parameters."""
    forms: list[str] = []
    if parts.password:
        user, password = unquote(parts.username or ""), unquote(parts.password)
        forms += _forms(parts.password) + _forms(password)
        forms.append(base64.b64encode(f"{user}:{password}".encode()).decode())
    for name, value in parse_qsl(parts.query):
        if _CREDENTIAL_PARAM.fullmatch(name):
            forms += _forms(value)
    return forms


class RedactFilter(logging.Filter):
    """Scrubs each record's message, arguments and traceback before any handler sees it.

    Installed on a handler, it covers every logger that propagates there, libraries
    included. The traceback is formatted here once and kept as ``exc_text``, which
    formatters print instead of formatting ``exc_info`` again.
    """

    _formatter = logging.Formatter()

    def __init__(self, secrets: Secrets | None = None) -> None:
        super().__init__()
        self._secrets = secrets if secrets is not None else Secrets()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: logging reports it later
            return True
        record.msg = self._secrets.scrub(message)
        record.args = ()
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._secrets.scrub(record.exc_text)
        if record.stack_info:
            record.stack_info = self._secrets.scrub(record.stack_info)
        return True
