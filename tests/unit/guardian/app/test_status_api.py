"""/api/v1/status on the engine's HTTP endpoint, and the client `guardian status --url` uses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from guardian.adapters.kube.rest import NotFound
from guardian.adapters.status_api import fetch_explain, fetch_status, status_url
from guardian.app.http_api import EngineHTTPServer
from guardian.app.rules.runtime import RuleEngine
from guardian.model.query import QueryResult
from guardian_common.errors import ConfigError, PermanentError, TransientError

REPORT = {"alerts": [], "pending": [{"workload": "ml/Deployment/x"}], "reclaimed": []}


def _engine() -> RuleEngine:
    return RuleEngine([], lambda _expr, _ts: QueryResult(()))


@pytest.fixture
def server() -> Iterator[Any]:
    servers: list[EngineHTTPServer] = []

    def start(**kw: Any) -> str:
        http = EngineHTTPServer(_engine(), "127.0.0.1", 0, **kw)
        http.start()
        servers.append(http)
        host, port = http.address
        return f"http://{host}:{port}"

    yield start
    for http in servers:
        http.stop()


def test_status_is_served_in_the_api_envelope_and_read_back(server: Any) -> None:
    base = server(status=lambda: REPORT)
    with urllib.request.urlopen(f"{base}/api/v1/status", timeout=5) as response:  # noqa: S310
        assert response.headers["Content-Type"] == "application/json"
        assert json.load(response) == {"status": "success", "data": REPORT}
    assert fetch_status(base) == REPORT
    assert fetch_status(f"{base}/api/v1/status/") == REPORT


def test_without_a_status_source_the_route_does_not_exist(server: Any) -> None:
    base = server()
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{base}/api/v1/status", timeout=5)  # noqa: S310
    assert info.value.code == 404
    info.value.close()
    with pytest.raises(PermanentError, match="answered HTTP 404"):
        fetch_status(base)


def test_the_status_url_and_messages_never_show_user_information() -> None:
    assert status_url("http://h:9469/") == "http://h:9469/api/v1/status"
    with pytest.raises(TransientError) as info:  # nothing listens there
        fetch_status("http://user:secret@127.0.0.1:9/nothing/api/v1/status", timeout=0.5)
    assert "secret" not in str(info.value)


def _explain(target: str, at: float | None) -> dict[str, Any]:
    if target == "ml/Deployment/gone":
        raise NotFound("deployments ml/gone not found")
    if "/" not in target:
        raise ConfigError(f"expected NAMESPACE/KIND/NAME, got {target!r}", field="target")
    return {"workload": target, "at": at}


def test_explain_is_served_with_its_errors_as_api_errors(server: Any) -> None:
    base = server(explain=_explain)
    assert fetch_explain(base, "ml/Deployment/x", None) == {
        "workload": "ml/Deployment/x",
        "at": None,
    }
    at = fetch_explain(base, "ml/Deployment/x", "2023-11-14T22:13:20Z")["at"]
    assert at == 1_700_000_000.0
    with pytest.raises(PermanentError, match="HTTP 404: deployments ml/gone not found"):
        fetch_explain(base, "ml/Deployment/gone", None)
    with pytest.raises(PermanentError, match="HTTP 400: target: expected NAMESPACE/KIND/NAME"):
        fetch_explain(base, "nonsense", None)
    with pytest.raises(PermanentError, match="HTTP 400: at: not an RFC 3339 time"):
        fetch_explain(base, "ml/Deployment/x", "yesterday")
