"""Attribution of every cgroup form, from the fixture /proc tree and from single paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.app.attribute import attribute
from exporter.engine.cgroup import parse_cgroup_file, parse_cgroup_path
from exporter.model.attribution import NO_POD, CgroupIdentity
from testbed.node.cgroups import cgroup_file_text, pod_cgroup_path

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


UID_ = UID.replace("-", "_")


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("prefix", ["cri-containerd", "crio", "docker"])
@pytest.mark.parametrize(
    "parent",
    [
        "",  # runc fs2 with an absolute-looking cgroupsPath: right under the root
        "/system.slice",  # fs2: below the parent of the runtime's own cgroup
        "/system.slice/containerd.service",  # fs (v1): below the runtime's own cgroup
        "/kubepods.slice/kubepods-burstable.slice",
    ],
)
@pytest.mark.parametrize(
    "pod_slice",
    [
        f"kubepods-pod{UID_}.slice",
        f"kubepods-burstable-pod{UID_}.slice",
        f"kubepods-besteffort-pod{UID_}.slice",
        f"kubelet-kubepods-besteffort-pod{UID_}.slice",
    ],
)
def test_colon_notation_names_the_pod_and_the_container(
    version: int, prefix: str, parent: str, pod_slice: str
) -> None:
    text = cgroup_file_text(f"{parent}/{pod_slice}:{prefix}:{CID}", version)  # type: ignore[arg-type]
    assert parse_cgroup_file(text) == CgroupIdentity(UID, CID)


@pytest.mark.parametrize(
    ("path", "want"),
    [
        # The runtime prefix part may be empty: "slice::id" names the scope "<id>.scope".
        (f"/kubepods-pod{UID_}.slice::{CID}", CgroupIdentity(UID, CID)),
        # A sub-cgroup below the colon component keeps the attribution.
        (f"/kubepods-pod{UID_}.slice:cri-containerd:{CID}/container", CgroupIdentity(UID, CID)),
        # Two or four parts are not runc's notation: the pod, but no guessed container.
        (f"/kubepods-pod{UID_}.slice:{CID}", CgroupIdentity(UID, None)),
        (f"/kubepods-pod{UID_}.slice:cri-containerd:{CID}:x", CgroupIdentity(UID, None)),
        # A helper that carries the container's ID is not the container.
        (f"/kubepods-pod{UID_}.slice:crio-conmon:{CID}", CgroupIdentity(UID, None)),
        # A non-pod slice in colon notation is no pod.
        (f"/system.slice:docker:{CID}", NO_POD),
    ],
)
def test_colon_notation_edge_cases(path: str, want: CgroupIdentity) -> None:
    assert parse_cgroup_path(path) == want


@pytest.mark.parametrize(
    "path",
    [
        f"/kubepods/burstable/pod{UID.upper()}/{CID.upper()}",
        f"/kubepods.slice/kubepods-pod{UID_.upper()}.slice/cri-containerd-{CID.upper()}.scope",
        f"/kubepods-besteffort-pod{UID_.upper()}.slice:cri-containerd:{CID.upper()}",
        f"/KUBEPODS.SLICE/KUBEPODS-POD{UID_}.SLICE/CRI-CONTAINERD-{CID}.SCOPE",
        f"/kubepods/Burstable/Pod{UID[:18].upper()}{UID[18:]}/{CID[:10].upper()}{CID[10:]}",
    ],
)
def test_letter_case_never_matters_and_identifiers_come_out_lowercase(path: str) -> None:
    assert parse_cgroup_path(path) == CgroupIdentity(UID, CID)


def _with_id(cid: str) -> list[str]:
    return [
        f"/kubepods/burstable/pod{UID}/{cid}",
        f"/kubepods/burstable/pod{UID}/crio-{cid}",
        f"/kubepods.slice/kubepods-pod{UID_}.slice/cri-containerd-{cid}.scope",
        f"/kubepods.slice/kubepods-pod{UID_}.slice/docker-{cid}.scope",
        f"/kubepods-pod{UID_}.slice:cri-containerd:{cid}",
    ]


@pytest.mark.parametrize(
    "path",
    [
        path
        for bad in (CID[:12], CID[:32], CID[:63], CID + "0", CID * 2, CID[:-1] + "g", "")
        for path in _with_id(bad)
    ],
)
def test_a_container_id_that_is_not_64_hex_digits_is_no_container(path: str) -> None:
    assert parse_cgroup_path(path) == CgroupIdentity(UID, None)


@pytest.mark.parametrize(
    "uid",
    [
        UID[:-1],  # one digit short
        UID + "0",  # one digit long
        UID[:8] + UID[9:],  # a separator missing
        UID[:13] + "_" + UID[14:],  # mixed separators
        UID.replace("-", "."),
        UID[:-1] + "g",  # not hex
        "6d5f8e7c9b0a1f2e3d4c5b6a79880a9",  # a config hash one digit short
    ],
)
def test_a_malformed_pod_uid_is_no_pod(uid: str) -> None:
    escaped = uid if "_" in uid else uid.replace("-", "_")  # keep a mixed one mixed
    for path in (
        f"/kubepods/burstable/pod{uid}/{CID}",
        f"/kubepods.slice/kubepods-pod{escaped}.slice/cri-containerd-{CID}.scope",
    ):
        assert parse_cgroup_path(path) == NO_POD, path


def test_lines_naming_different_pods_leave_the_process_unattributed() -> None:
    other = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    text = f"5:memory:/kubepods/pod{UID}/{CID}\n4:pids:/kubepods/pod{other}/{CID}\n"
    assert parse_cgroup_file(text) == NO_POD


def test_lines_naming_different_containers_of_one_pod_keep_only_the_pod() -> None:
    text = f"5:memory:/kubepods/pod{UID}/{CID}\n4:pids:/kubepods/pod{UID}/{'e' * 64}\n"
    assert parse_cgroup_file(text) == CgroupIdentity(UID, None)


def test_the_outermost_pod_wins_over_cgroups_a_workload_made_below_itself() -> None:
    other = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    path = f"/kubepods/pod{UID}/{CID}/kubepods-pod{other.replace('-', '_')}.slice/{'e' * 64}"
    assert parse_cgroup_path(path) == CgroupIdentity(UID, CID)


@pytest.mark.parametrize(
    "path",
    [
        f"/../../besteffort/pod{UID}/{CID}",  # read from inside a cgroup namespace
        f"/kubepods.slice/kubepods-pod{UID_}.slice/crio-{CID}.scope/container",  # crun, v2
        f"/kubepods/pod{UID}/{CID} (deleted)",
        f"//kubepods/pod{UID}/{CID}",
    ],
)
def test_other_shapes_of_the_same_identity(path: str) -> None:
    assert parse_cgroup_path(path) == CgroupIdentity(UID, CID)
