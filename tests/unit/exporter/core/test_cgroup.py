"""Attribution of every cgroup form, from the fixture /proc tree and from single paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.app.attribute import attribute
from exporter.engine.cgroup import parse_cgroup_file, parse_cgroup_path
from exporter.model.attribution import NO_POD, CgroupIdentity
from exporter.sim.cgroups import cgroup_file_text, pod_cgroup_path

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "exporter"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
UID = "3f6e1a2b-7c8d-4e9f-a0b1-c2d3e4f5a6b7"
CID = "9a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"


def test_attribute_lists_every_numeric_directory_and_nothing_else() -> None:
    result = attribute(FIXTURES / "proc")
    assert [r["pid"] for r in result] == sorted(int(p) for p in EXPECTED)


@pytest.mark.parametrize("pid", sorted(EXPECTED, key=int), ids=lambda p: EXPECTED[p]["form"])
def test_fixture_tree_form(pid: str) -> None:
    [found] = attribute(FIXTURES / "proc", int(pid))
    want = EXPECTED[pid]
    assert (found["pod_uid"], found["container_id"]) == (want["pod_uid"], want["container_id"])


@pytest.mark.parametrize("driver", ["systemd", "cgroupfs"])
@pytest.mark.parametrize("runtime", ["containerd", "crio", "docker"])
@pytest.mark.parametrize("qos", ["guaranteed", "burstable", "besteffort"])
@pytest.mark.parametrize("version", [1, 2])
def test_every_layout_the_simulator_writes_round_trips(
    driver: str, runtime: str, qos: str, version: int
) -> None:
    path = pod_cgroup_path(UID, CID, driver=driver, runtime=runtime, qos=qos)  # type: ignore[arg-type]
    text = cgroup_file_text(path, version)  # type: ignore[arg-type]
    assert parse_cgroup_file(text) == CgroupIdentity(UID, CID)


@pytest.mark.parametrize(
    "path",
    [
        "/system.slice/podman-1234.scope",
        "/pods/burstable/podx/abc",
        f"/kubepods/burstable/pod{UID[:-1]}/{CID}",  # one hex digit short
        f"/kubepods/burstable/xpod{UID}/{CID}",
        "/",
        "",
    ],
)
def test_components_that_merely_start_with_pod_never_match(path: str) -> None:
    assert parse_cgroup_path(path) == NO_POD


def test_underscored_systemd_uid_becomes_dashed_lowercase() -> None:
    raw = UID.upper().replace("-", "_")
    found = parse_cgroup_path(f"/kubepods.slice/kubepods-pod{raw}.slice/docker-{CID}.scope")
    assert found == CgroupIdentity(UID, CID)


def test_container_id_from_another_line_of_the_same_pod() -> None:
    text = f"5:cpuset:/kubepods/burstable/pod{UID}\n4:memory:/kubepods/burstable/pod{UID}/{CID}\n"
    assert parse_cgroup_file(text) == CgroupIdentity(UID, CID)


def test_malformed_lines_are_ignored() -> None:
    assert parse_cgroup_file("garbage\n\n::\n") == NO_POD
