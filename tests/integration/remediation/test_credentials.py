"""Kubernetes credentials for the commands that talk to Kubernetes (issue #13, item 4).

``guardian restore`` and ``guardian status --live`` load credentials the standard way
(in-cluster, then $KUBECONFIG, then ~/.kube/config; --kubeconfig and --context
override) and turn every credential or connection failure into one line, exit 2. They
run as subprocesses, as a person runs them, with an environment the test controls.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from guardian.adapters.kube.credentials import KubeAccessError, KubeCredentials, load_api_client
from guardian.adapters.ledger import EpisodeState, Ledger
from guardian.model.labels import LabelSet
from guardian.model.policies import Annotations
from guardian.model.remediation_events import LadderStep, RemediationEvent, StepOutcome, WorkloadRef
from testbed.kubeapi import FakeKubeAPI
from testbed.kubeapi import builders as b

REF = WorkloadRef("apps/v1", "Deployment", "ml", "train")
NOW = 1_700_000_000.0
RECLAIMED = {
    Annotations.RECLAIMED_AT: "2023-11-14T22:13:20Z",
    Annotations.RECLAIMED_BY: "idle",
    Annotations.ORIGINAL_REPLICAS: "3",
    Annotations.EPISODE: "ep1",
}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A HOME without ~/.kube/config."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def state(kube: FakeKubeAPI, tmp_path: Path) -> Path:
    """ml/train reclaimed (0 of 3 replicas) in the cluster and in the ledger."""
    kube.create(b.deployment("train", "ml", replicas=0, annotations=RECLAIMED))
    path = tmp_path / "state.db"
    ledger = Ledger.open(str(path))
    try:
        ledger.open_episode(REF, "ep1", NOW - 600, "idle")
        event = RemediationEvent(
            "ep1", REF, LadderStep.RECLAIM, StepOutcome.APPLIED, NOW, "idle", "scaled",
            LabelSet(), original_replicas=3,
        )  # fmt: skip
        ledger.record(event)
        ledger.set_episode_state("ep1", EpisodeState.RECLAIMED)
    finally:
        ledger.close()
    return path


def guardian(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m guardian ...`` outside any pod, with HOME and the given variables only."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "HOME"))}
    return subprocess.run(
        [sys.executable, "-m", "guardian", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**base, "HOME": str(home), **env},
    )


def restore(home: Path, state: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    return guardian(home, "restore", "ml/Deployment/train", "--state", str(state), *flags, **env)


def status(home: Path, state: Path, *flags: str, **env: str) -> subprocess.CompletedProcess[str]:
    return guardian(home, "status", "--state", str(state), "--live", *flags, **env)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


COMMANDS = {"restore": restore, "status": status}


@pytest.mark.parametrize("command", COMMANDS)
def test_no_kubeconfig_anywhere(command: str, home: Path, state: Path) -> None:
    line = one_line(COMMANDS[command](home, state))
    assert line == (
        f"guardian {command}: no Kubernetes credentials: not running in a pod, $KUBECONFIG is "
        f"unset and {home}/.kube/config does not exist (pass --kubeconfig)"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_a_bad_kubeconfig_path(command: str, home: Path, state: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "config"
    line = one_line(COMMANDS[command](home, state, "--kubeconfig", str(missing)))
    assert line == f"guardian {command}: kubeconfig {missing}: no such file"
    line = one_line(COMMANDS[command](home, state, KUBECONFIG=str(missing)))
    assert line == f"guardian {command}: $KUBECONFIG ({missing}): no such file"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_broken_kubeconfig_or_context(
    command: str, home: Path, state: Path, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.write_text("apiVersion: v1\nkind: Config\nclusters: [\n", encoding="utf-8")
    line = one_line(COMMANDS[command](home, state, "--kubeconfig", str(broken)))
    assert line.startswith(f"guardian {command}: kubeconfig {broken}: ")
    good = kube.write_kubeconfig(tmp_path / "kc")
    line = one_line(COMMANDS[command](home, state, "--kubeconfig", str(good), "--context", "x"))
    assert line.startswith(f"guardian {command}: kubeconfig {good}: ")
    assert "x" in line


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unreachable_server(
    command: str, home: Path, state: Path, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    config = kube.kubeconfig()
    port = closed_port()
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
    path = tmp_path / "unreachable"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    line = one_line(COMMANDS[command](home, state, KUBECONFIG=str(path)))
    assert line.startswith(f"guardian {command}: Kubernetes API server http://127.0.0.1:{port}: ")
    assert line.endswith("cannot connect: Connection refused")


@pytest.mark.parametrize("command", COMMANDS)
def test_a_forbidden_verb(
    command: str, home: Path, state: Path, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    good = kube.write_kubeconfig(tmp_path / "kc")
    message = 'deployments.apps "train" is forbidden: User "guardian" cannot get'
    kube.fail_next(403, verb="get", path="deployments/train$", message=message)
    line = one_line(COMMANDS[command](home, state, "--kubeconfig", str(good)))
    assert line.startswith(f"guardian {command}: Kubernetes API server http://127.0.0.1:")
    assert line.endswith(f"403 Forbidden: {message} (grant it in the RBAC role)")


def test_a_forbidden_patch_is_recorded_and_ends_the_restore(
    home: Path, state: Path, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    """The step's own failure is logged (a warning) and goes to the ledger; the command's
    answer is still its one last line, exit 2."""
    good = kube.write_kubeconfig(tmp_path / "kc")
    message = 'deployments.apps "train" is forbidden: User "guardian" cannot patch'
    kube.fail_next(403, verb="patch", path="deployments/train$", message=message)
    done = restore(home, state, "--kubeconfig", str(good))
    assert done.returncode == 2, done.stderr
    last = done.stderr.splitlines()[-1]
    assert last.startswith("guardian restore: Kubernetes API server http://127.0.0.1:")
    assert last.endswith(f"403 Forbidden: {message} (grant it in the RBAC role)")
    assert "Traceback" not in done.stderr
    assert kube.get("Deployment", "train", "ml")["spec"]["replicas"] == 0
    ledger = Ledger.open(str(state))
    try:
        [failed] = [e for e in ledger.all_events() if e.outcome is StepOutcome.FAILED]
    finally:
        ledger.close()
    assert failed.step is LadderStep.RESTORE
    assert "forbidden by RBAC" in failed.reason


def test_home_kube_config_is_used_when_kubeconfig_is_unset(
    home: Path, state: Path, kube: FakeKubeAPI
) -> None:
    """The reported bug: restore ignored ~/.kube/config when $KUBECONFIG was unset."""
    (home / ".kube").mkdir()
    kube.write_kubeconfig(home / ".kube" / "config")
    live = status(home, state, "--json")
    assert live.returncode == 0, live.stderr
    report = json.loads(live.stdout)
    assert report["reclaimed"][0]["now"] == "0 replicas, still reclaimed"
    assert report["live"]["kill_switch"].startswith("off")
    done = restore(home, state)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ml/Deployment/train: scaled back to 3"


def test_kubeconfig_variable_lists_files_and_the_flag_wins(
    home: Path, state: Path, kube: FakeKubeAPI, tmp_path: Path
) -> None:
    good = kube.write_kubeconfig(tmp_path / "kc", context="fake")
    listed = f"{tmp_path / 'absent'}:{good}"
    assert status(home, state, KUBECONFIG=listed).returncode == 0
    broken = tmp_path / "broken"
    broken.write_text("::: not yaml", encoding="utf-8")
    done = status(home, state, "--kubeconfig", str(good), KUBECONFIG=str(broken))
    assert done.returncode == 0, done.stderr
    assert "kill switch: off" in done.stdout


def test_in_cluster_comes_first_and_context_skips_it(tmp_path: Path, kube: FakeKubeAPI) -> None:
    account = tmp_path / "sa"
    account.mkdir()
    (account / "token").write_text("t0ken", encoding="utf-8")
    (account / "ca.crt").write_text("not checked here", encoding="utf-8")
    good = kube.write_kubeconfig(tmp_path / "kc")
    env = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    in_pod = KubeCredentials(env={**env, "KUBECONFIG": str(good)}, service_account_dir=account)
    client = load_api_client(in_pod)
    try:
        assert client.configuration.host == "https://10.96.0.1:443"
        assert client.configuration.api_key["BearerToken"] == "bearer t0ken"
    finally:
        client.close()
    with_context = KubeCredentials(context="fake", env=in_pod.env, service_account_dir=account)
    assert with_context.source() == (f"$KUBECONFIG ({good})", str(good))
    no_token = KubeCredentials(env=env, home=tmp_path, service_account_dir=tmp_path / "none")
    with pytest.raises(KubeAccessError, match=r"no service account token in .*/none, "):
        load_api_client(no_token)
