"""ReclaimPolicy validation (file, line, field), defaults, overlaps and the check command."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from guardian.app.remediation.policy_files import load_policies
from guardian.cli import main as guardian_main
from guardian.engine.remediation import find_overlaps
from guardian.model.policies import AlertMatch, HpaPolicy, Mode
from guardian.model.policies_load import parse_policies
from guardian_common.errors import ConfigError, ConfigErrors

HEAD = "apiVersion: gpu-guardian.io/v1alpha1\nkind: ReclaimPolicy\n"
ROOT = Path(__file__).resolve().parents[4]


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigErrors) as caught:
        parse_policies(text, "p.yaml")
    return [str(e) for e in caught.value.errors]


def test_defaults_are_safe() -> None:
    (policy,) = parse_policies(HEAD + "metadata: {name: a}\n", "p.yaml")
    spec = policy.spec
    assert spec.mode is Mode.OBSERVE
    assert spec.hpa is HpaPolicy.REFUSE
    assert not spec.allow_pod_deletion
    assert spec.alerts.match_labels == {"guardian_class": "reclaimable"}
    assert (spec.ladder.notify, spec.ladder.grace_period, spec.warmup) == (True, 3600.0, 1800.0)
    assert policy.source == "p.yaml:1"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "metadata: {name: a}\nspec:\n  mode: agressive\n",
            "p.yaml:5: spec.mode: Input should be 'observe' or 'enforce'",
        ),
        (
            "metadata: {name: a}\nspec:\n  ladder:\n    gracePeriod: 1x\n",
            "p.yaml:6: spec.ladder.gracePeriod: not a valid duration string",
        ),
        (
            "metadata: {name: a}\nspec:\n  ladder:\n    notify: false\n",
            "p.yaml:5: spec.ladder: reclaim needs notify: true",
        ),
        (
            "metadata: {name: a}\nspec:\n  scope:\n    namespace: [ml]\n",
            "p.yaml:6: spec.scope.namespace: unknown field",
        ),
        ("metadata: {name: Bad_Name}\n", "p.yaml:3: metadata.name: invalid name 'Bad_Name'"),
        (
            "metadata: {name: a}\nspec:\n  limits: {perCycle: -1}\n",
            "p.yaml:5: spec.limits.perCycle: Input should be greater than or equal to 0",
        ),
        (
            (
                "metadata: {name: a}\nspec:\n  scope:\n    workloadSelector:\n"
                "      matchExpressions:\n        - {key: team, operator: In}\n"
            ),
            "p.yaml:8: spec.scope.workloadSelector.matchExpressions[0]: operator In needs values",
        ),
    ],
)
def test_errors_name_file_line_and_field(body: str, expected: str) -> None:
    found = errors(HEAD + body)
    assert any(e.startswith(expected) for e in found), found


@pytest.mark.parametrize(
    ("value", "seconds"), [("0", 0.0), ("0s", 0.0), ("90", 90.0), ("1m30s", 90.0), ("'15'", 15.0)]
)
def test_policy_durations_allow_zero_and_take_the_shared_syntax(value: str, seconds: float) -> None:
    text = (
        HEAD
        + f"metadata: {{name: a}}\nspec:\n  warmup: {value}\n  ladder: {{gracePeriod: {value}}}\n"
    )
    (policy,) = parse_policies(text, "p.yaml")
    assert (policy.spec.warmup, policy.spec.ladder.grace_period) == (seconds, seconds)


@pytest.mark.parametrize(
    ("value", "reason"), [("-1", "greater than or equal to 0"), ("true", "not a boolean")]
)
def test_policy_durations_refuse_negatives_and_booleans(value: str, reason: str) -> None:
    (found,) = errors(HEAD + f"metadata: {{name: a}}\nspec:\n  warmup: {value}\n")
    assert found.startswith("p.yaml:5: spec.warmup: ")
    assert reason in found


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("priority: true", "p.yaml:5: spec.priority: must be an integer, not a boolean (true)"),
        ("priority: '10'", "p.yaml:5: spec.priority: must be an integer, not the string '10'"),
        ("priority: 1.5", "p.yaml:5: spec.priority: Input should be a valid integer"),
        (
            "ladder: {reclaim: 'yes'}",
            "p.yaml:5: spec.ladder.reclaim: must be true or false, not the string 'yes'",
        ),
        ("ladder: {notify: 1}", "p.yaml:5: spec.ladder.notify: Input should be a valid boolean"),
        (
            "limits: {perCycle: '3'}",
            "p.yaml:5: spec.limits.perCycle: must be an integer, not the string '3'",
        ),
        ("allowPodDeletion: 'false'", "p.yaml:5: spec.allowPodDeletion: must be true or false"),
    ],
)
def test_wrong_types_are_refused_not_coerced(spec: str, expected: str) -> None:
    # YAML quoting mistakes: "3" is not 3, true is not 1, "yes" is not a boolean.
    (found,) = errors(HEAD + f"metadata: {{name: a}}\nspec:\n  {spec}\n")
    assert found.startswith(expected), found


@pytest.mark.parametrize(
    "value", ["99999999999999999y", "101y", "1e400", "9999999999999999999999999999"]
)
def test_overlong_grace_period_is_refused_at_load(value: str) -> None:
    # Accepted before, it raised OverflowError inside the planner.
    (found,) = errors(HEAD + f"metadata: {{name: a}}\nspec:\n  ladder: {{gracePeriod: {value}}}\n")
    assert found.startswith("p.yaml:5: spec.ladder.gracePeriod: ")


def test_wrong_kind_and_multi_document_lines() -> None:
    text = HEAD + "metadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n"
    assert errors(text) == [
        (
            "p.yaml:5: apiVersion: expected apiVersion gpu-guardian.io/v1alpha1 and kind "
            "ClusterReclaimPolicy or "
            "ReclaimPolicy, got 'v1' 'ConfigMap'"
        )
    ]
    assert errors(HEAD + "metadata: {name: a}\nspec: [\n")[0].startswith("p.yaml:")


def test_duplicate_names_across_files(tmp_path: Path) -> None:
    for name in ("one.yaml", "two.yaml"):
        (tmp_path / name).write_text(HEAD + "metadata: {name: same}\n", encoding="utf-8")
    with pytest.raises(ConfigErrors, match=r"two.yaml:1: metadata.name: policy 'same' already"):
        load_policies([str(tmp_path / "*.yaml")])
    with pytest.raises(ConfigError, match="no policy file matches"):
        load_policies([str(tmp_path / "missing-*.yaml")])


def test_overlaps() -> None:
    text = (
        HEAD
        + "metadata: {name: a}\nspec: {priority: 1, scope: {namespaces: [ml]}}\n---\n"
        + HEAD
        + "metadata: {name: b}\nspec: {priority: 1}\n---\n"
        + HEAD
        + "metadata: {name: c}\nspec: {priority: 5, scope: {kinds: [Notebook]}}\n---\n"
        + HEAD
        + "metadata: {name: d}\nspec: {scope: {namespaces: [other]}}\n"
    )
    overlaps = {
        (o.winner.name, o.loser.name, o.ambiguous)
        for o in find_overlaps(parse_policies(text, "p.yaml"))
    }
    assert overlaps == {
        ("a", "b", True),
        ("c", "a", False),
        ("c", "b", False),
        ("c", "d", False),
        ("b", "d", False),
    }


def test_check_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert guardian_main(["policies", "check", str(ROOT / "examples/policies/*.yaml")]) == 0
    assert "ok: 3 policy(ies)" in capsys.readouterr().out
    ambiguous = tmp_path / "p.yaml"
    ambiguous.write_text(
        HEAD + "metadata: {name: a}\n---\n" + HEAD + "metadata: {name: b}\n", encoding="utf-8"
    )
    assert guardian_main(["policies", "check", str(ambiguous)]) == 1
    assert "give one a higher priority" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text(HEAD + "metadata: {name: a}\nspec: {mode: x}\n", encoding="utf-8")
    assert guardian_main(["policies", "check", str(bad)]) == 2  # a configuration error
    assert f"{bad}:4: spec.mode" in capsys.readouterr().err
    assert argparse  # the parser module is in use through guardian_main


ADVICE = (
    "GpuMemoryUnderutilized is right-sizing advice (guardian_class: rightsize): "
    "no policy reclaims on it; it is notified on its own"
)


@pytest.mark.parametrize(
    ("alerts", "where"),
    [
        ("    names: [GpuIdle, GpuMemoryUnderutilized]\n", "p.yaml:6: spec.alerts.names: "),
        ("    matchLabels: {guardian_class: rightsize}\n", "p.yaml:6: spec.alerts.matchLabels: "),
        (
            "    matchLabels: {alertname: GpuMemoryUnderutilized}\n",
            "p.yaml:6: spec.alerts.matchLabels: ",
        ),
    ],
    ids=["by name", "by class", "by alertname label"],
)
def test_a_policy_asking_for_memory_advice_is_refused_at_load(alerts: str, where: str) -> None:
    # Low memory use means the GPU is too big, not unused: reclaiming on it would scale
    # a busy inference server with a small model to 0.
    text = HEAD + "metadata: {name: a}\nspec:\n  alerts:\n" + alerts
    assert errors(text) == [where + ADVICE]


def test_the_check_command_prints_why_a_memory_policy_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "memory.yaml"
    path.write_text(
        HEAD + "metadata: {name: a}\nspec:\n  mode: enforce\n  alerts:\n"
        "    names: [GpuMemoryUnderutilized]\n",
        encoding="utf-8",
    )
    assert guardian_main(["policies", "check", str(path)]) == 2  # a configuration error
    err = capsys.readouterr().err
    assert f"{path}:7: spec.alerts.names: {ADVICE}" in err


def test_the_check_note_on_short_form_enforcing_policies_names_shared_gpus(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "p.yaml"
    path.write_text(HEAD + "metadata: {name: a}\nspec: {mode: enforce}\n", encoding="utf-8")
    assert guardian_main(["policies", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "note: a enforces on every alert with {'guardian_class': 'reclaimable'}" in out
    assert "GpuShareIdle too" in out
    assert "GpuMemoryUnderutilized" not in out  # advice: no policy acts on it anyway


@pytest.mark.parametrize(
    ("spec", "labels", "acts"),
    [
        ({}, {"alertname": "GpuIdle", "guardian_class": "reclaimable"}, True),
        ({}, {"alertname": "GpuMemoryUnderutilized", "guardian_class": "rightsize"}, False),
        # An alert from an older rule file, still labelled reclaimable: never acted on.
        ({}, {"alertname": "GpuMemoryUnderutilized", "guardian_class": "reclaimable"}, False),
        # Empty matchLabels asks for every class, but never advice or the pipeline's.
        ({"matchLabels": {}}, {"alertname": "X", "guardian_class": "rightsize"}, False),
        (
            {"matchLabels": {}},
            {"alertname": "GpuExporterDown", "guardian_class": "pipeline"},
            False,
        ),
        (
            {"matchLabels": {"guardian_class": "pipeline"}},
            {"alertname": "GpuExporterDown", "guardian_class": "pipeline"},
            False,
        ),
        # violation and coverage stay opt-in: a policy that asks for them acts on them.
        ({}, {"alertname": "GpuUnallocatedUse", "guardian_class": "violation"}, False),
        (
            {"matchLabels": {"guardian_class": "violation"}},
            {"alertname": "GpuUnallocatedUse", "guardian_class": "violation"},
            True,
        ),
        (
            {"matchLabels": {"guardian_class": "coverage"}},
            {"alertname": "GpuActivityUnknown", "guardian_class": "coverage"},
            True,
        ),
    ],
)
def test_which_alert_classes_a_policy_can_act_on(
    spec: dict[str, object], labels: dict[str, str], acts: bool
) -> None:
    assert AlertMatch.model_validate(spec).matches(labels) is acts
