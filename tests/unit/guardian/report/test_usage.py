"""Days, rows, summaries and the four outputs of ``guardian report`` (pure)."""

from __future__ import annotations

import csv
import io
import re

import pytest

from guardian.app.report.formats import render_csv, render_json, render_table
from guardian.app.report.gpu_hours import ReportResult
from guardian.app.report.html import render_html
from guardian.app.report.svg import MAX_KEYS, Series, capped, nice_ticks
from guardian.engine.notify.findings import PriceTable
from guardian.engine.report.chargeback import (
    PodHours,
    day_of,
    summarize,
    total,
    usage_rows,
    windows,
)

DAY = 86400.0
T0 = 1_700_006_400.0  # a UTC midnight


def test_windows_cut_at_utc_midnight_with_partial_ends() -> None:
    cut = windows(T0 + 6 * 3600, T0 + 2 * DAY + 3600)

    assert cut == [
        (T0 + 6 * 3600, T0 + DAY),
        (T0 + DAY, T0 + 2 * DAY),
        (T0 + 2 * DAY, T0 + 2 * DAY + 3600),
    ]
    assert [day_of(end) for _, end in cut] == ["2023-11-15", "2023-11-16", "2023-11-17"]


def hours(
    day: str, pod: str, metric: str, value: float, model: str = "NVIDIA A100", group: str = "a"
) -> PodHours:
    return PodHours(day, "c1", group, "ml", pod, model, metric, value)


ROWS = usage_rows(
    [
        hours("2023-11-15", "train-7d9f8c6b5-x2x4z", "allocated", 24.0),
        hours("2023-11-15", "train-7d9f8c6b5-x2x4z", "used", 6.0),
        hours("2023-11-15", "train-5f6d7c8b9-q9w8v", "allocated", 24.0),  # the same Deployment
        hours("2023-11-15", "train-5f6d7c8b9-q9w8v", "idle", 24.0),
        # ... while the other replica was used: idle in a partly idle workload.
        hours("2023-11-15", "train-5f6d7c8b9-q9w8v", "idle_partly", 24.0),
        hours("2023-11-16", "db-0", "allocated", 10.0, model="Tesla T4", group="b"),
        hours("2023-11-16", "db-0", "idle", 10.0, model="Tesla T4", group="b"),
        hours("2023-11-16", "db-0", "idle_partly", 4.0, model="Tesla T4", group="b"),
    ],
    PriceTable({"A100": 2.0}),
)
DAYS = ["2023-11-15", "2023-11-16"]


def test_rows_join_pods_into_workloads_and_price_each_model() -> None:
    first, second = ROWS

    assert (first.workload, first.allocated, first.used, first.idle) == (
        "Deployment/train",
        48.0,
        6.0,
        24.0,
    )
    assert (first.cost, first.idle_cost) == (96.0, 48.0)
    assert (first.idle_fully, first.idle_partly) == (0.0, 24.0)
    assert (second.idle_fully, second.idle_partly) == (6.0, 4.0)
    assert (second.workload, second.cost) == ("StatefulSet/db", None)  # no price for a T4


def test_summaries_by_group_have_every_day_and_unknown_cost_stays_unknown() -> None:
    by_group = {s.key: s for s in summarize(ROWS, "gpu_group", DAYS)}

    assert by_group["a"].daily["2023-11-16"] == {
        "allocated": 0.0,
        "used": 0.0,
        "idle": 0.0,
        "idle_fully": 0.0,
        "idle_partly": 0.0,
        "cost": 0.0,
        "idle_cost": 0.0,
    }
    assert by_group["a"].daily["2023-11-15"]["idle_partly"] == 24.0
    assert (by_group["b"].idle_fully, by_group["b"].idle_partly) == (6.0, 4.0)
    assert by_group["a"].utilization == pytest.approx(6 / 48)
    assert by_group["b"].cost is None
    assert total(ROWS, DAYS).cost is None
    with pytest.raises(ValueError, match="cannot summarize by"):
        summarize(ROWS, "pod", DAYS)


RESULT = ReportResult(T0, T0 + 2 * DAY, DAYS, ROWS, "$", "guardian", 300.0, 0.05, 6)


def test_table_csv_and_json() -> None:
    table = render_table(RESULT, "gpu_group")
    rows = list(csv.DictReader(io.StringIO(render_csv(RESULT))))
    data = render_json(RESULT, "workload")

    assert "$96.00" in table
    assert "n/a" in table
    assert rows[0]["workload"] == "Deployment/train"
    assert rows[1]["cost"] == ""
    assert [g["key"] for g in data["groups"]] == ["Deployment/train", "StatefulSet/db"]
    assert data["total"]["allocated_gpu_hours"] == 58.0


def test_html_is_one_small_file_with_a_headline_charts_and_a_workload_table() -> None:
    page = render_html(RESULT, "gpu_group")

    assert page.startswith("<!DOCTYPE html>")
    assert "<script src=" not in page
    assert not re.search(r"https?://", page)  # nothing to fetch: it opens offline
    assert len(page.encode()) < 100_000
    # The headline first: idle cost, share of spend idle (unknown: a T4 has no price).
    assert page.index('id="headline"') < page.index("<svg")
    assert '<div class="value" id="headline-idle-cost">n/a</div>' in page
    assert '<div class="value" id="headline-share-idle">n/a</div>' in page
    assert '<div class="value" id="headline-idle-hours">34.0 of 58.0</div>' in page
    top = page[page.index('<ol id="headline-top">') :]
    assert top.index("ml/Deployment/train") < top.index("ml/StatefulSet/db")
    for chart in ("idle-cost", "spend", "idle-gpu-hours", "idle-split"):
        assert page.count(f'<figure class="chart" id="{chart}">') == 1
    assert page.count('<svg class="main-svg"') == 4
    assert ">in fully idle workloads</text>" in page
    assert ">in partly idle workloads</text>" in page
    legend = re.findall(r'<text class="legendtext"[^>]*>([^<]+)</text>', page)
    assert legend.count("a") == legend.count("b") == 3  # idle cost, spend, idle GPU-hours
    assert "<title>a, 2023-11-15: $48.00</title>" in page  # the idle cost bar's hover
    workloads = page[page.index('<table id="workloads"') :]
    assert workloads.index("Deployment/train") < workloads.index("StatefulSet/db")
    assert '<td data-v="0.500000">50.0%</td>' in workloads  # train: 24 of 48 GPU-h idle
    assert "<th>fully idle</th><th>partly idle</th>" in page


def test_headline_in_table_and_json() -> None:
    priced = ReportResult(T0, T0 + DAY, DAYS[:1], ROWS[:1], "$", "guardian", 300.0, 0.05, 3)
    table = render_table(priced, "gpu_group").splitlines()
    data = render_json(priced, "gpu_group")

    assert table[2:6] == [
        "idle cost: $48.00 of $96.00 GPU spend (50.0% of spend idle)",
        "idle GPU-hours: 24.0 of 48.0 allocated (50.0%)",
        "top idle workloads:",
        "  1. ml/Deployment/train: $48.00 idle (24.0 idle GPU-hours, 50.0% of its GPU-hours)",
    ]
    assert data["headline"]["share_of_spend_idle"] == 0.5
    assert data["headline"]["top_idle_workloads"][0]["workload"] == "Deployment/train"
    assert data["workloads"][0]["idle_gpu_hours_partly_idle"] == 24.0


def test_charts_cap_keys_and_round_their_axis() -> None:
    series = [Series(f"k{i}", [float(i)]) for i in range(15)]
    capped_series = capped(series)

    assert len(capped_series) == MAX_KEYS
    assert capped_series[-1] == Series("other (6)", [9.0 + 10 + 11 + 12 + 13 + 14])
    assert nice_ticks(0.0) == [0.0, 1.0]
    assert nice_ticks(87.0) == [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
    assert nice_ticks(4599.0)[-1] == 5000.0


def test_idle_hours_split_into_fully_and_partly_idle_workloads_in_every_format() -> None:
    table = render_table(RESULT, "workload").splitlines()
    rows = list(csv.DictReader(io.StringIO(render_csv(RESULT))))
    data = render_json(RESULT, "workload")

    head = next(line for line in table if line.startswith("WORKLOAD"))
    assert head.split()[7:11] == ["FULLY", "IDLE", "PARTLY", "IDLE"]
    train = next(line for line in table if line.startswith("Deployment/train"))
    assert train.split()[1:6] == ["48.0", "6.0", "24.0", "0.0", "24.0"]
    total = next(line for line in table if line.startswith("total"))
    assert total.split()[3:6] == ["34.0", "6.0", "28.0"]
    assert table[-2].startswith("FULLY IDLE: idle GPU-hours in workloads all of whose GPUs")
    assert table[-1].startswith("PARTLY IDLE: idle GPU-hours in workloads that also held a busy")
    assert [(r["idle_gpu_hours_fully_idle"], r["idle_gpu_hours_partly_idle"]) for r in rows] == [
        ("0.000000", "24.000000"),
        ("6.000000", "4.000000"),
    ]
    groups = {g["key"]: g for g in data["groups"]}
    assert groups["Deployment/train"]["idle_gpu_hours_partly_idle"] == 24.0
    assert groups["StatefulSet/db"]["idle_gpu_hours_fully_idle"] == 6.0
    assert data["total"]["daily"][1]["idle_partly"] == 4.0
    assert data["rows"][0]["idle_partly"] == 24.0
