"""Every loader of both programs, fed hostile files through its CLI command.

Each case must exit 2 with one line naming the file and the problem, within the runner's
limits: 2 s of CPU and 100 MiB more memory than the CLI starts with (a regression hits
the limit and fails as SIGXCPU or MemoryError), and no blocking (a FIFO).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hostile.harness import Run
from tests.hostile.inputs import COMMON, Hostile, mistyped

ROOT = Path(__file__).resolve().parents[2]
GOOD_SCENARIO = str(ROOT / "testbed/node/scenarios/shared-node.yaml")
SERVE = ["serve", "--kubernetes", "off", "--port", "0"]
POLICY_HEAD = "apiVersion: gpu-guardian.io/v1alpha1\nkind: ReclaimPolicy\nmetadata: {name: a}\n"


@dataclass(frozen=True)
class Loader:
    name: str
    program: str
    argv: tuple[str, ...]  # {} is the hostile file
    mistyped: Hostile
    frame: str = r"$^"  # lines the command prints around its findings (a summary)

    def command(self, path: Path) -> list[str]:
        return [str(path) if arg == "{}" else arg for arg in self.argv]


LOADERS = [
    Loader(
        "rule file",
        "guardian",
        ("rules", "check", "{}"),
        mistyped("groups:\n- name: g\n  limit: true\n  rules: []\n", "limit must be a non-neg"),
        frame=r"^1 problems? found$",
    ),
    Loader(
        "policy file",
        "guardian",
        ("policies", "check", "{}"),
        mistyped(POLICY_HEAD + "spec: {priority: true}\n", "must be an integer, not a boolean"),
    ),
    Loader(
        "controller config",
        "guardian",
        ("eval", "--config", "{}"),
        mistyped(
            "prometheus: {url: 'http://p'}\nrule_files: [r.yaml]\n"
            "remediation: {max_actions_per_cycle: '3'}\n",
            "must be an integer, not the string '3'",
        ),
    ),
    Loader(
        "rules test file",
        "guardian",
        ("rules", "test", "{}"),
        mistyped("evaluation_interval: true\ntests: []\n", "not a valid duration string"),
        frame=r"^(Unit Testing: .*|  FAILED:|0 test groups?: .*|)$",
    ),
    Loader(
        "scenario",
        "node",
        (*SERVE, "--scenario", "{}"),
        mistyped("gpus: [{uuid: GPU-1, memory_total: true}]\n", "not a boolean"),
    ),
    Loader(
        "users file",
        "node",
        (*SERVE, "--scenario", GOOD_SCENARIO, "--basic-auth-users-file", "{}"),
        mistyped("basic_auth_users: {prom: 1}\n", "the hash must be a string"),
    ),
    Loader(
        "vGPU file",
        "node",
        (*SERVE, "--scenario", GOOD_SCENARIO, "--vgpu-config", "{}"),
        mistyped("default: '2'\n", "must be a number, not the string '2'"),
    ),
]

CASES = [
    pytest.param(loader, hostile, id=f"{loader.name}-{hostile.name}")
    for loader in LOADERS
    for hostile in [*COMMON, loader.mistyped]
]


@pytest.mark.parametrize(("loader", "hostile"), CASES)
def test_hostile_file_exits_2_with_one_line(
    loader: Loader, hostile: Hostile, run_cli: Run, tmp_path: Path
) -> None:
    if loader.name == "rules test file" and not (
        shutil.which("promtool") and shutil.which("prometheus")
    ):
        pytest.skip("guardian rules test needs prometheus and promtool on PATH")
    path = hostile.make(tmp_path)

    outcome = run_cli(loader.program, loader.command(path))

    outcome.limits_held()
    assert outcome.code == 2, outcome
    (line,) = [line for line in outcome.lines if not re.match(loader.frame, line)]
    assert str(path) in line
    assert hostile.expect in line
