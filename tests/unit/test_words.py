"""The words people read: counts with the right plural, errors that name the command and
say what they accept, progress lines that make sense."""

from __future__ import annotations

import argparse
import io
import re
from collections import Counter
from pathlib import Path

import pytest

from guardian.app.history.fetch import Chunk
from guardian.app.simulate.printout import _money, render_text
from guardian.app.simulate.simulation import SimulationResult
from guardian.cli import main as guardian_main
from guardian.cli._history import parse_range
from guardian.engine.notify.findings import apply_remediation
from guardian.engine.simulate.reclaim_outcomes import HoldSpan
from guardian.model.history import TimeRange
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome
from guardian_common.words import amount, plural
from testbed.demo import run as demo_run
from testbed.demo.timeline import Timeline
from tests.unit.guardian.notify.samples import LABELS, RULES, T0, WORKLOAD, grace

NOW = 1_700_000_000.0


def test_plural() -> None:
    assert plural(0, "time") == "0 times"
    assert plural(1, "time") == "1 time"
    assert plural(2, "replica") == "2 replicas"
    assert plural(1, "query", "queries") == "1 query"
    assert plural(3, "query", "queries") == "3 queries"
    assert plural(1, "pod no longer exists", "pods no longer exist") == "1 pod no longer exists"
    assert plural(2, "pod no longer exists", "pods no longer exist") == "2 pods no longer exist"


@pytest.mark.parametrize(("replicas", "said"), [(1, "(was 1 replica)"), (3, "(was 3 replicas)")])
def test_the_reclaim_line_counts_replicas(replicas: int, said: str) -> None:
    event = RemediationEvent(
        episode="e",
        workload=WORKLOAD,
        step=LadderStep.RECLAIM,
        outcome=StepOutcome.APPLIED,
        at=T0 + 7200,
        policy="p",
        reason="idle 30m",
        alert_labels=LABELS,
        original_replicas=replicas,
    )
    changed = apply_remediation(grace(), event, RULES)
    assert changed is not None
    assert said in changed[1].text


def _result(holds: int) -> SimulationResult:
    span = HoldSpan(NOW, NOW + 60, WORKLOAD, "", "held", 1)
    return SimulationResult(
        span=TimeRange(NOW - 3600, NOW, 60),
        groups=1,
        rules=1,
        queries=1,
        instant_rules=(),
        workloads_source="series",
        metrics="m",
        policies=[],
        fired=Counter(),
        steps=[],
        reclaims=[],
        holds=[span] * holds,
        global_holds=[span],
        refusals=[],
        currency="$",
        horizon=3600,
    )


def test_the_simulation_summary_counts_times_cycles_groups_and_rules() -> None:
    one = render_text(_result(1))
    assert ": 1 group, 1 rule, 1 query, " in one
    assert "pipeline health held every action: 1 time\n" in one
    assert "held a workload's ladder: 1 time\n" in one
    assert "other guards said no: 0 times" in one
    assert "(1 cycle)" in one
    assert "held a workload's ladder: 2 times\n" in render_text(_result(2))


def test_the_demo_intro_counts_pods() -> None:
    out = io.StringIO()
    demo_run._intro(Timeline(lambda: 0.0, out))
    counts = re.findall(r"\((\d+) (pods?)\)", out.getvalue())
    assert counts
    for n, word in counts:
        assert word == ("pod" if n == "1" else "pods"), out.getvalue()


def test_a_one_step_chunk_names_one_time_not_a_span_from_it_to_itself() -> None:
    one = Chunk(1, 3, TimeRange(NOW, NOW, 86400))
    assert one.describe() == "chunk 1/3 (at 2023-11-14T22:13:20Z)"
    two = Chunk(2, 3, TimeRange(NOW, NOW + 86400, 86400))
    assert two.describe() == "chunk 2/3 (2023-11-14T22:13:20Z to 2023-11-15T22:13:20Z)"


@pytest.mark.parametrize("since", ["7x", "last week", "-"])
def test_a_bad_since_says_the_durations_it_accepts(since: str) -> None:
    args = argparse.Namespace(since=since, until=None, chunk="1d")
    with pytest.raises(ValueError, match=r"--since: .*such as 7d") as caught:
        parse_range(args, NOW)
    assert repr(since) in str(caught.value)


def test_a_good_since_still_parses() -> None:
    for since in ("7d", "2023-11-14T00:00:00Z", "1699920000"):
        args = argparse.Namespace(since=since, until=None, chunk="1d")
        assert parse_range(args, NOW).since < NOW


def test_status_errors_name_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert guardian_main(["status", "--state", str(tmp_path / "none.db")]) == 1
    assert capsys.readouterr().err.startswith("guardian status: no state database at ")
    # A config error goes through guardian's main: it names the command too.
    assert guardian_main(["status", "--config", str(tmp_path / "none.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("guardian status: "), err


def test_a_nested_command_names_itself_in_config_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "none.yaml"
    assert guardian_main(["policies", "check", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"guardian policies check: {missing}: cannot read"), err


def test_rules_test_on_a_missing_file_names_it_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.yaml"
    assert guardian_main(["rules", "test", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert "test group" not in out
    assert err.splitlines() == [f"{missing}: cannot read: no such test file"]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (0.0056, "0.0056"),  # not "0.0", which reads as nothing
        (0.05, "0.05"),
        (0.5, "0.5"),
        (0.999, "1.0"),
        (12.345, "12.3"),
        (1234.5, "1,234.5"),
        (1.2e-5, "0.000012"),
        (-0.25, "-0.25"),
    ],
)
def test_amounts_read_as_people_write_them(value: float, text: str) -> None:
    assert amount(value) == text


@pytest.mark.parametrize(
    ("cost", "text"),
    [
        (None, "n/a (no price)"),
        (0.0, "$0.00"),
        (0.0036, "$0.0036"),  # a short replay's saving: not "$0.00", which reads as none
        (0.004999, "$0.005"),
        (0.005, "$0.01"),
        (1234.567, "$1,234.57"),
    ],
)
def test_money_keeps_a_saving_under_a_cent_visible(cost: float | None, text: str) -> None:
    assert _money(cost, "$") == text
