"""A loopback stand-in for Thanos Query in front of several real Prometheus servers.

Each upstream is one cluster's Prometheus and its external labels, which Prometheus
keeps out of its own TSDB. An instant query goes to every upstream and the vectors come
back merged, every series with its upstream's external labels set (they win over a
series' own, as Thanos's do). That is the query over the merged data whenever the query
keeps clusters apart, as every query of the shipped packs does (each aggregation and
join carries ``cluster``); matchers on external labels are not emulated. Any upstream's
failure fails the query (``partial_response=false``). Remote writes and every other
path go to the first upstream. Tests use it to put two clusters behind one endpoint.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from testbed.loopback_proxy import LoopbackProxy, call, reply

logger = logging.getLogger(__name__)

_QUERY_PATHS = ("/api/v1/query",)
_FORWARDED_HEADERS = ("content-type", "content-encoding", "x-prometheus-remote-write-version")


@dataclass(frozen=True)
class Store:
    """One upstream Prometheus and the external labels Thanos would add to its series."""

    url: str
    external_labels: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ThanosQuery(LoopbackProxy):
    stores: Sequence[Store]

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        parsed = urllib.parse.urlsplit(handler.path)
        if parsed.path not in _QUERY_PATHS:
            headers = {k: v for k, v in handler.headers.items() if k.lower() in _FORWARDED_HEADERS}
            status, data = call(self.stores[0].url + handler.path, handler.command, body, headers)
            reply(handler, status, data)
            return
        params = urllib.parse.parse_qsl(parsed.query) + urllib.parse.parse_qsl(body.decode())
        form = urllib.parse.urlencode(params).encode()
        answers = []
        for store in self.stores:
            status, data = call(
                store.url + parsed.path,
                "POST",
                form,
                {"Content-Type": "application/x-www-form-urlencoded"},
            )
            if status != 200:
                reply(handler, status, data)
                return
            answers.append((store, json.loads(data)))
        reply(handler, 200, json.dumps(_merge(answers)).encode())


def _merge(answers: list[tuple[Store, dict[str, Any]]]) -> dict[str, Any]:
    first = answers[0][1]
    data = first.get("data") or {}
    if data.get("resultType") not in ("vector", "matrix"):
        return first  # a scalar or string is the same from every store
    result = [
        {**series, "metric": {**series.get("metric", {}), **store.external_labels}}
        for store, answer in answers
        for series in (answer.get("data") or {}).get("result", [])
    ]
    merged: dict[str, Any] = {"status": "success", "data": {**data, "result": result}}
    warnings = [w for _, answer in answers for w in answer.get("warnings", [])]
    if warnings:
        merged["warnings"] = warnings
    return merged
