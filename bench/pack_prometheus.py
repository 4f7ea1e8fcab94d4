"""Prometheus's own evaluation of the pack: each group's evaluations as they complete.

``/metrics`` is polled every half second for
``prometheus_rule_group_last_evaluation_timestamp_seconds`` (the slot a group was
evaluated at, set when the evaluation ends); each time a group's slot moves,
``/api/v1/rules`` is read once for that group's ``evaluationTime``, each rule's
``evaluationTime`` and each alerting rule's active alerts (labels and state). Rule
evaluation is switched on and off by reloading the config (``/-/reload``), so the data
is loaded before the first evaluation and the engine later runs on a quiet server.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from guardian.engine.rules.slots import slot_offset_ns

_LAST_EVAL = re.compile(
    r'^prometheus_rule_group_last_evaluation_timestamp_seconds\{rule_group="([^"]*)"\} (\S+)$', re.M
)

Alerts = list[tuple[dict[str, str], str]]  # (labels, state)


@dataclass
class RuleEval:
    name: str
    kind: str  # "alerting" | "recording"
    seconds: float
    alerts: Alerts


@dataclass
class GroupEval:
    file: str
    name: str
    ts: float
    seconds: float
    rules: list[RuleEval]


@dataclass
class PrometheusRun:
    evaluations: dict[tuple[str, str], list[GroupEval]] = field(default_factory=dict)

    def groups(self) -> list[tuple[str, str]]:
        return sorted(self.evaluations)


def _get(url: str, timeout: float = 60) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - loopback
        body: bytes = response.read()
        return body


def reload_rules(url: str, config_path: Path, rule_files: list[Path], interval: str) -> None:
    config = yaml.safe_load(config_path.read_text())
    config["rule_files"] = [str(p.resolve()) for p in rule_files]
    config["global"]["evaluation_interval"] = interval
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    request = urllib.request.Request(f"{url}/-/reload", method="POST")  # noqa: S310
    with urllib.request.urlopen(request, timeout=120):  # noqa: S310 - loopback
        pass


def exact_slot(file: str, name: str, approx: float, interval: float) -> float:
    """The slot Prometheus evaluated at, in whole milliseconds as its queries see it (the
    metric's float loses the nanoseconds the offset has)."""
    interval_ns = round(interval * 1e9)
    offset = slot_offset_ns(file, name, interval)
    k = round((approx * 1e9 - offset) / interval_ns)
    return ((k * interval_ns + offset) // 1_000_000) / 1000


def _slots(url: str, interval: float) -> dict[tuple[str, str], float]:
    text = _get(f"{url}/metrics").decode()
    out: dict[tuple[str, str], float] = {}
    for key, value in _LAST_EVAL.findall(text):
        file, _, name = key.rpartition(";")
        if float(value) > 0:
            out[(file, name)] = exact_slot(file, name, float(value), interval)
    return out


def _group_eval(url: str, file: str, name: str, ts: float) -> GroupEval | None:
    body = json.loads(_get(f"{url}/api/v1/rules"))
    for group in body["data"]["groups"]:
        if group["file"] != file or group["name"] != name:
            continue
        rules = [
            RuleEval(
                rule.get("name", ""),
                rule["type"],
                float(rule.get("evaluationTime", 0.0)),
                [(a["labels"], a["state"]) for a in rule.get("alerts", [])],
            )
            for rule in group["rules"]
        ]
        return GroupEval(file, name, ts, float(group["evaluationTime"]), rules)
    return None


def watch(
    url: str, groups: int, evaluations: int, interval: float, timeout: float
) -> PrometheusRun:
    """Record every group's evaluations until each has ``evaluations`` after its first
    (the first one is kept for the comparison but not timed: it may overlap the reload)."""
    run = PrometheusRun()
    seen: dict[tuple[str, str], float] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for key, ts in _slots(url, interval).items():
            if seen.get(key) == ts:
                continue
            seen[key] = ts
            found = _group_eval(url, key[0], key[1], ts)
            if found is not None:
                run.evaluations.setdefault(key, []).append(found)
        counts = [len(v) for v in run.evaluations.values()]
        if len(counts) == groups and min(counts) > evaluations:
            return run
        time.sleep(0.5)
    raise TimeoutError(f"prometheus did not evaluate every group {evaluations} times in {timeout}s")


def process_rss_mib(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of a process, MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def alerts_key(labels: dict[str, str], state: str) -> tuple[tuple[tuple[str, str], ...], str]:
    return tuple(sorted(labels.items())), state


def to_json(run: PrometheusRun, *, alerts: bool = False) -> dict[str, Any]:
    return {
        f"{file};{name}": [
            [
                e.ts,
                e.seconds,
                [
                    (r.name, r.kind, r.seconds, r.alerts if alerts else len(r.alerts))
                    for r in e.rules
                ],
            ]
            for e in evs
        ]
        for (file, name), evs in run.evaluations.items()
    }
