"""The shipped rule packs and their tests, checked by the real promtool.

Every rule file under ``rules/`` (the packs and the parity suite's own rule
files) must pass ``promtool check rules``, and every promtool-format test file
under ``rules/tests/`` and ``rules/parity/`` must pass ``promtool test rules``.
Files are found on disk, so a new pack or test file is picked up without
editing this module; finding none is a failure, not a skip.

Beyond promtool, the packs keep the conventions of issue #6: every alert
carries ``severity`` and ``guardian_class`` labels and ``summary``,
``description`` and ``runbook_url`` annotations, and has a test where it fires
and one where it does not.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from guardian.adapters.local_prometheus import PrometheusBinaries
from guardian.model.policies import ADVICE_ALERTS, RIGHTSIZE

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[3]
RULES_DIR = REPO_ROOT / "rules"
TESTS_DIR = RULES_DIR / "tests"
PARITY_DIR = RULES_DIR / "parity"
PARITY_RULES_DIR = PARITY_DIR / "rules"
RUNBOOK_PATTERN = "https://gpu-guardian.io/runbooks/{alertname_lower}"
GUARDIAN_CLASSES = {"reclaimable", "rightsize", "pipeline", "violation", "coverage"}
PROMTOOL_TIMEOUT_S = 50


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if p.is_file() and p.suffix in {".yaml", ".yml"})


def pack_files() -> list[Path]:
    """Rule files of the shipped packs: ``rules/<pack>/*.yaml`` except the test suites."""
    packs = [
        d
        for d in sorted(RULES_DIR.iterdir())
        if d.is_dir() and d not in (TESTS_DIR, PARITY_DIR) and not d.name.startswith(".")
    ]
    return [f for d in packs for f in _yaml_files(d)]


def rule_files() -> list[Path]:
    return pack_files() + _yaml_files(PARITY_RULES_DIR)


def promtool_test_files() -> list[Path]:
    return _yaml_files(TESTS_DIR) + _yaml_files(PARITY_DIR)


def _id(path: Path) -> str:
    return str(path.relative_to(REPO_ROOT))


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{_id(path)}: top level is not a mapping"
    return data


def _alerts(path: Path) -> list[dict[str, Any]]:
    return [
        rule
        for group in _load(path).get("groups") or []
        for rule in group.get("rules") or []
        if "alert" in rule
    ]


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = PrometheusBinaries.find().promtool
    return subprocess.run(
        [promtool, *args],
        capture_output=True,
        text=True,
        timeout=PROMTOOL_TIMEOUT_S,
        cwd=REPO_ROOT,
        check=False,
    )


def _referenced_rule_files(test_file: Path) -> set[Path]:
    """The rule files a test file loads, resolved against its directory as promtool does."""
    found: set[Path] = set()
    for pattern in _load(test_file).get("rule_files") or []:
        found.update(p.resolve() for p in test_file.parent.glob(pattern))
    return found


@pytest.mark.parametrize(
    ("kind", "directory"),
    [
        ("pack rule", None),
        ("parity rule", PARITY_RULES_DIR),
        ("rule test", TESTS_DIR),
        ("parity test", PARITY_DIR),
    ],
)
def test_files_are_found(kind: str, directory: Path | None) -> None:
    found = pack_files() if directory is None else _yaml_files(directory)
    assert found, f"no {kind} files found under {_id(directory or RULES_DIR)}"


@pytest.mark.parametrize("rule_file", rule_files(), ids=_id)
def test_promtool_check_rules(rule_file: Path) -> None:
    result = _promtool("check", "rules", "--lint-fatal", str(rule_file))
    assert result.returncode == 0, (
        f"promtool check rules {_id(rule_file)} failed:\n{result.stdout}{result.stderr}"
    )


@pytest.mark.parametrize("test_file", promtool_test_files(), ids=_id)
def test_promtool_test_rules(test_file: Path) -> None:
    result = _promtool("test", "rules", str(test_file))
    assert result.returncode == 0, (
        f"promtool test rules {_id(test_file)} failed:\n{result.stdout}{result.stderr}"
    )


@pytest.mark.parametrize("test_file", promtool_test_files(), ids=_id)
def test_every_rule_files_entry_matches_a_rule_file(test_file: Path) -> None:
    """A pattern matching nothing would let "not firing" expectations pass vacuously."""
    patterns = _load(test_file).get("rule_files") or []
    assert patterns, f"{_id(test_file)}: no rule_files"
    for pattern in patterns:
        assert list(test_file.parent.glob(pattern)), f"{_id(test_file)}: {pattern} matches nothing"


@pytest.mark.parametrize("test_file", promtool_test_files(), ids=_id)
def test_inputs_have_no_staleness_markers(test_file: Path) -> None:
    """GPU Guardian's parity harness backfills inputs, and backfill cannot write staleness
    markers, so the shipped tests end a series with `_` or a shorter series instead."""
    for case in _load(test_file).get("tests") or []:
        for series in case.get("input_series") or []:
            values = str(series.get("values", "")).split()
            assert "stale" not in values, (
                f"{_id(test_file)}: test {case.get('name')!r}, series {series.get('series')}: "
                "`stale` cannot be backfilled; end the series with `_` instead"
            )


@pytest.mark.parametrize("pack_file", pack_files(), ids=_id)
def test_pack_alerts_carry_labels_and_annotations(pack_file: Path) -> None:
    alerts = _alerts(pack_file)
    assert alerts, f"{_id(pack_file)} defines no alert"
    for rule in alerts:
        name = rule["alert"]
        labels = rule.get("labels") or {}
        annotations = rule.get("annotations") or {}
        where = f"{_id(pack_file)}: alert {name}"
        assert labels.get("severity") in {"critical", "warning", "info"}, f"{where}: severity"
        assert labels.get("guardian_class") in GUARDIAN_CLASSES, f"{where}: guardian_class"
        for key in ("summary", "description", "runbook_url"):
            assert str(annotations.get(key, "")).strip(), f"{where}: annotation {key} missing"
        expected_url = RUNBOOK_PATTERN.format(alertname_lower=name.lower())
        assert annotations["runbook_url"] == expected_url, f"{where}: runbook_url"


@pytest.mark.parametrize("pack_file", pack_files(), ids=_id)
def test_every_pack_alert_is_tested_firing_and_quiet(pack_file: Path) -> None:
    """Some test file loads the pack file and expects each alert both firing and not firing."""
    target = pack_file.resolve()
    firing: set[str] = set()
    quiet: set[str] = set()
    for test_file in promtool_test_files():
        if target not in _referenced_rule_files(test_file):
            continue
        for case in _load(test_file).get("tests") or []:
            for check in case.get("alert_rule_test") or []:
                (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    for name in sorted({rule["alert"] for rule in _alerts(pack_file)}):
        assert name in firing, f"{_id(pack_file)}: no test expects {name} to fire"
        assert name in quiet, f"{_id(pack_file)}: no test expects {name} to stay quiet"


def test_memory_advice_is_rightsize_in_both_packs_and_tested_so() -> None:
    """GpuMemoryUnderutilized is advice, never waste: its class is `rightsize` (which no
    policy acts on) in both packs, in every test that expects it, and the policy model's
    list of advice alerts names exactly the packs' rightsize alerts."""
    rightsize = set()
    for pack in ("guardian", "dcgm"):
        for rule in _alerts(RULES_DIR / pack / "memory.yaml"):
            assert rule["alert"] == "GpuMemoryUnderutilized"
            assert rule["labels"]["guardian_class"] == RIGHTSIZE, pack
        rightsize |= {
            rule["alert"]
            for f in sorted((RULES_DIR / pack).glob("*.yaml"))
            for rule in _alerts(f)
            if rule["labels"]["guardian_class"] == RIGHTSIZE
        }
    assert rightsize == set(ADVICE_ALERTS)
    expected = 0
    for test_file in _yaml_files(TESTS_DIR):
        for case in _load(test_file).get("tests") or []:
            for check in case.get("alert_rule_test") or []:
                if check["alertname"] != "GpuMemoryUnderutilized":
                    continue
                for alert in check.get("exp_alerts") or []:
                    assert alert["exp_labels"]["guardian_class"] == RIGHTSIZE, _id(test_file)
                    expected += 1
    assert expected >= 2 * 2  # fired in both packs' memory and cluster tests


def test_platform_groups_are_the_same_in_both_packs() -> None:
    """The exporter-independent platform group ships in both packs; it must not drift."""
    guardian, dcgm = RULES_DIR / "guardian" / "platform.yaml", RULES_DIR / "dcgm" / "platform.yaml"
    guardian_groups, dcgm_groups = _load(guardian)["groups"], _load(dcgm)["groups"]
    assert [g["rules"] for g in guardian_groups] == [g["rules"] for g in dcgm_groups]
    names = [g["name"] for g in guardian_groups + dcgm_groups]
    assert len(names) == len(set(names)), f"group names repeat across packs: {names}"
