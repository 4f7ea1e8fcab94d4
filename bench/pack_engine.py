"""Our engine on the same server, at the same slots Prometheus evaluated (a child process,
so its peak RSS is the engine's alone).

    python bench/pack_engine.py JOB.json OUT.jsonl

JOB: ``{"url", "interval", "rule_files": [...], "slots": {"<file>;<group>": [ts, ...]},
"concurrent_queries", "query_shards"}``. Each group is evaluated at its slots in order,
with the SQLite alert store, the fan-out of ``prometheus.concurrent_queries`` and the
shards of ``prometheus.query_shards``, as ``guardian run`` does. OUT gets a line per
active alert after each evaluation (group, ts, rule index, labels, state), a line per
evaluation (cycle, the process's CPU seconds, the queries' seconds added up, queries,
each rule's seconds) and a last line with the peak RSS. Lines are written as they come,
so holding them costs nothing.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from guardian.adapters.alert_store import AlertStore
from guardian.adapters.prometheus import PrometheusAccess, PrometheusQuerier
from guardian.app.rules.runtime import RuleEngine
from guardian.engine.rules.group_eval import CompiledGroup
from guardian.engine.rules.loader import parse_rule_file
from guardian.model.http_client import HttpClientConfig

try:
    from guardian.app.rules.thread_fan_out import ThreadFanOut
except ImportError:  # an older checkout (a "before" run): its engine evaluates in order
    ThreadFanOut = None  # type: ignore[assignment,misc]
try:
    from guardian.app.rules.shard_values import LabelValuesCache
    from guardian.app.settings.clients import PrometheusSettings
    from guardian.engine.rules.sharding import Sharding
except ImportError:  # an older checkout: its engine asks every query whole
    Sharding = None  # type: ignore[assignment,misc]
try:
    from guardian.app.rules.engine_setup import EngineSinks, EvaluationSetup
except ImportError:  # an older checkout: its engine took each collaborator on its own
    EngineSinks = None  # type: ignore[assignment,misc]


def new_engine(groups: list[CompiledGroup], query: Any, store: AlertStore, **how: Any) -> Any:
    """The engine with the alert store; ``how``: its fan_out and sharding, if any."""
    if EngineSinks is None:
        return RuleEngine(groups, query, store=store, **how)  # type: ignore[call-arg]
    return RuleEngine(
        groups, query, evaluation=EvaluationSetup(**how), sinks=EngineSinks(store=store)
    )


def peak_rss_mib() -> float:
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss across exec from the (large) parent.
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main(job_path: str, out_path: str) -> None:
    job = json.loads(Path(job_path).read_text())
    query_seconds: list[float] = []
    querier = PrometheusQuerier(
        PrometheusAccess(HttpClientConfig(job["url"], timeout=300)),
        observer=lambda _outcome, seconds: query_seconds.append(seconds),
    )
    groups = [
        CompiledGroup.compile(g, float(job["interval"]))
        for path in job["rule_files"]
        for g in parse_rule_file(Path(path).read_text(), path).groups
    ]
    by_key = {f"{g.group.file};{g.name}": g for g in groups}
    with tempfile.TemporaryDirectory(prefix="pack-engine-") as tmp, open(out_path, "w") as out:
        store = AlertStore.open(f"{tmp}/state.db")
        if ThreadFanOut is None:
            engine = new_engine(groups, querier.query, store)
        else:
            fan_out = ThreadFanOut(int(job.get("concurrent_queries", 1)))
            shards = int(job.get("query_shards", 1))
            sharding = None
            if Sharding is not None and shards > 1:
                labels = tuple(PrometheusSettings.model_fields["shard_labels"].default)
                sharding = Sharding(shards, labels, LabelValuesCache(querier.label_values))
            engine = new_engine(groups, querier.query, store, fan_out=fan_out, sharding=sharding)
        for key, slots in sorted(job["slots"].items()):
            group = by_key[key]
            for ts in slots:
                query_seconds.clear()
                started, cpu = time.perf_counter(), time.process_time()
                evaluation = engine.evaluate(group.key, ts)
                cycle, cpu = time.perf_counter() - started, time.process_time() - cpu
                state = engine.runtime(group.key).state
                for index, (rule_key, _) in enumerate(group.rules):
                    for alert in state.get(rule_key, {}).values():
                        if alert.is_active:
                            item = [key, ts, index, alert.labels.to_dict(), alert.state.value]
                            out.write(json.dumps({"alert": item}) + "\n")
                rules = [
                    [rule.rule.name, outcome.duration_seconds]
                    for (_, rule), outcome in zip(group.rules, evaluation.outcomes, strict=True)
                ]
                errors = [o.error for o in evaluation.outcomes if o.error]
                line = {
                    "group": key,
                    "ts": ts,
                    "cycle": cycle,
                    "cpu": cpu,
                    "query": sum(query_seconds),
                    "queries": len(query_seconds),
                    "rules": rules,
                    "errors": errors,
                }
                out.write(json.dumps(line) + "\n")
                out.flush()
        out.write(json.dumps({"peak_rss_mib": peak_rss_mib()}) + "\n")
        engine.close()
    querier.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
