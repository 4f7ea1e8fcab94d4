"""The test Prometheus of one test group: backfilled input, and out-of-order ingestion on.

Input series are backfilled (``promtool tsdb create-blocks-from openmetrics``) around unix
time 0, where promtool puts them. The engine's own output (``ALERTS``,
``ALERTS_FOR_STATE``, recording-rule results and their staleness markers) is then
remote-written at the same timestamps, so that queries see it exactly where promtool's
storage would have it. Prometheus's head refuses samples older than the newest backfilled
block ("out of bounds"), so the server is reloaded with
``storage.tsdb.out_of_order_time_window`` set, which 2.39+ accepts and which keeps
staleness markers. Timestamps are never shifted, so ``time()``, ``timestamp()`` and
``ALERTS_FOR_STATE`` values are those promtool gives.

Unlike promtool's in-memory storage, a server has limits: retention and the
out-of-order window are set to 290 years (about the longest Go duration, so no test
promtool can run is cut short), backfill writes one block for the whole input, and a
query may hold 10,000 samples, as in promtool's test engine.
"""

from __future__ import annotations

from pathlib import Path

import requests
import yaml

from guardian.adapters.local_prometheus import (
    LocalPrometheus,
    PrometheusBinaries,
    PrometheusOptions,
    start_prometheus,
)
from guardian.adapters.openmetrics import Sample, render_openmetrics
from guardian.engine.promtest.model import TestGroup
from guardian.engine.promtest.notation import Stale
from guardian_common.durations import format_duration
from guardian_common.errors import PermanentError

# Retention counts back from the newest sample and out-of-order writes may reach back
# this far: both as long as a Go duration (promtool's eval_time too) can be.
HISTORY_LIMIT = "290y"
PROMTOOL_MAX_SAMPLES = 10_000  # promql.LazyLoader's EngineOpts in promtool 2.42
_BASE_BLOCK_HOURS = 2  # the TSDB's block ranges are 2h * 3^k, k = 0..9


def block_duration(samples: list[Sample]) -> str | None:
    """The ``--max-block-duration`` that puts the whole input in one block, or None when
    promtool's default 2h blocks already do.

    promtool writes blocks of its largest range not above the flag; inputs start at 0s,
    so the first range longer than the last timestamp holds everything. A week at one
    sample a minute would otherwise be 84 blocks, a year 4380: slow to write, slower to
    open and compact.
    """
    last_ms = max((round(s.timestamp * 1000) for s in samples), default=0)
    hours = _BASE_BLOCK_HOURS
    for _ in range(9):
        if hours * 3_600_000 > last_ms:
            break
        hours *= 3
    return None if hours == _BASE_BLOCK_HOURS else f"{hours}h"


class UnsupportedTestError(PermanentError):
    """The test needs something backfill cannot do (staleness markers)."""


def input_samples(group: TestGroup) -> list[Sample]:
    samples: list[Sample] = []
    for series in group.input_series:
        labels = dict(series.labels)
        name = labels.pop("__name__", "")
        if not name:
            raise PermanentError(f"input series {series.labels} (line {series.line}) has no name")
        for timestamp_ms, point in series.loaded(group.interval_ms):
            if isinstance(point, Stale):
                raise UnsupportedTestError("input_series use 'stale'")
            samples.append(Sample(name, labels, timestamp_ms / 1000, point))
    return samples


def start_test_prometheus(
    workdir: Path,
    group: TestGroup,
    evaluation_interval_ms: int,
    binaries: PrometheusBinaries,
) -> LocalPrometheus:
    """A Prometheus holding the group's input, ready for remote writes at any timestamp."""
    samples = input_samples(group)
    options = PrometheusOptions(
        openmetrics=render_openmetrics(samples) if samples else None,
        backfill_block_duration=block_duration(samples),
        # The server's evaluation_interval is the default subquery step, as promtool's.
        evaluation_interval=format_duration(evaluation_interval_ms / 1000),
        # promtool's test engine allows a query 10,000 samples in memory.
        extra_args=(f"--query.max-samples={PROMTOOL_MAX_SAMPLES}",),
        retention=HISTORY_LIMIT,
    )
    prom = start_prometheus(workdir, options, binaries=binaries)
    try:
        config = yaml.safe_load(prom.config_path.read_text(encoding="utf-8")) or {}
        config["storage"] = {"tsdb": {"out_of_order_time_window": HISTORY_LIMIT}}
        prom.config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        response = requests.post(f"{prom.url}/-/reload", timeout=30)
        if response.status_code != 200:
            raise PermanentError(f"prometheus refused the reload: {response.text.strip()}")
    except BaseException:
        prom.stop()
        raise
    return prom
