"""``guardian policies check``: scopes, durations as written, optIn without a team
policy, and ``--effective``: each value of each policy with where it comes from.

The ``--effective`` output is a snapshot in ``snapshots/``. After an intended change,
regenerate it with ``GUARDIAN_UPDATE_SNAPSHOTS=1 .venv/bin/pytest`` on this file and
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guardian.cli import main as guardian_main

FLEET = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ClusterReclaimPolicy
metadata:
  name: fleet
spec:
  mode: enforce
  delegation: optIn
  alerts:
    names: [GpuIdle]
  scope:
    namespaceSelector:
      matchLabels: {gpu-guardian.io/reclaim: "true"}
  ladder:
    gracePeriod: 1h30m
    annotate: false
  warmup: 10m
  exclusions:
    namespaces: [ml-prod]
  activeWindows: ["Mon-Fri 08:00-19:00 Europe/Berlin"]
"""

TEAM = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ReclaimPolicy
metadata: {name: training, namespace: ml}
spec:
  mode: enforce
  ladder: {gracePeriod: 2h}
  exclusions: {namespaces: [ml-scratch]}
  activeWindows: ["Mon-Fri 09:00-17:00 Europe/Berlin"]
"""

EFFECTIVE = Path(__file__).parent / "snapshots/policies_check_effective.txt"


def check(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    **files: str,
) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        (tmp_path / f"{name}.yaml").write_text(text, encoding="utf-8")
    args = ["policies", "check", *(f"{name}.yaml" for name in files)]
    code = guardian_main(args)
    done = capsys.readouterr()
    return code, done.out, done.err


def test_effective_says_where_each_value_comes_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fleet.yaml").write_text(FLEET, encoding="utf-8")
    (tmp_path / "team.yaml").write_text(TEAM, encoding="utf-8")
    assert guardian_main(["policies", "check", "--effective", "fleet.yaml", "team.yaml"]) == 0
    out = capsys.readouterr().out
    if os.environ.get("GUARDIAN_UPDATE_SNAPSHOTS") == "1":
        EFFECTIVE.write_text(out, encoding="utf-8")
    assert out == EFFECTIVE.read_text(encoding="utf-8")


def test_opt_in_without_a_team_policy_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = check(tmp_path, monkeypatch, capsys, fleet=FLEET)
    assert code == 0  # team policies may be objects in the cluster: a note, not a failure
    assert (
        "note: fleet: nothing is enforced: delegation optIn and no team policy opts in"
        in out.splitlines()
    )
    code, out, err = check(tmp_path, monkeypatch, capsys, fleet=FLEET, team=TEAM)
    assert "nothing is enforced" not in out + err
    hasty = TEAM.replace("{gracePeriod: 2h}", "{gracePeriod: 45m}")
    code, out, err = check(tmp_path, monkeypatch, capsys, fleet=FLEET, team=hasty)
    assert code == 1
    assert (
        "ml/training has no effect: spec.ladder.gracePeriod: 45m is shorter than the "
        "cluster minimum 1h30m (ClusterReclaimPolicy fleet)" in err
    )
    assert (
        "note: fleet: nothing is enforced: delegation optIn and no team policy opts in "
        "(rejected: ml/training)" in out
    )


SCOPED = """\
apiVersion: gpu-guardian.io/v1alpha1
kind: ClusterReclaimPolicy
metadata: {name: %s}
spec:
  scope: %s
  ladder: {gracePeriod: %s}
  warmup: %s
"""


@pytest.mark.parametrize(
    ("scope", "grace", "warmup", "says"),
    [
        (
            "{}",
            "2h",
            "45s",
            "all namespaces; ladder: notify → annotate → reclaim after 2h; warm-up 45s",
        ),
        ("{namespaces: [ml, research]}", "5400", "0", "namespaces ml, research; ladder: "),
        (
            "{namespaceSelector: {matchLabels: {team: ml}}}",
            "1h30m",
            "500ms",
            (
                "namespaceSelector team=ml; ladder: notify → annotate → reclaim after 1h30m; "
                "warm-up 500ms"
            ),
        ),
        (
            (
                "{workloadSelector: {matchExpressions: [{key: tier, operator: NotIn, values: "
                "[prod, staging]}, {key: gpu, operator: Exists}]}, kinds: [Job]}"
            ),
            "90s",
            "1d",
            (
                "all namespaces, workloadSelector tier notin (prod,staging),gpu, kinds Job; "
                "ladder: notify → annotate → reclaim after 1m30s; warm-up 1d"
            ),
        ),
        (
            (
                "{namespaceSelector: {matchExpressions: [{key: frozen, operator: DoesNotExist}]},"
                " workloadSelector: {matchLabels: {app: train}}}"
            ),
            "7200",
            "30m",
            (
                "namespaceSelector !frozen, workloadSelector app=train; ladder: notify → "
                "annotate → reclaim after 2h; warm-up 30m"
            ),
        ),
    ],
)
def test_the_summary_says_the_scope_and_durations_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scope: str,
    grace: str,
    warmup: str,
    says: str,
) -> None:
    code, out, _ = check(tmp_path, monkeypatch, capsys, p=SCOPED % ("p", scope, grace, warmup))
    assert code == 0
    assert f"ClusterReclaimPolicy p (p.yaml:1): priority 0, mode observe, {says}" in out
