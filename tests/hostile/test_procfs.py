"""``/proc/<pid>/cgroup`` under ``--proc-root``: a FIFO, /dev/zero, a huge or binary file
must neither hang nor exhaust the exporter; that process is just not attributed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from exporter.adapters.procfs import CGROUP_MAX_BYTES
from tests.hostile.harness import Run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "exporter" / "proc"
POD = "000003e9-1b2c-4d3e-8f90-a1b2c3d4e5e9"


def test_hostile_cgroup_files_are_skipped(run_cli: Run, tmp_path: Path) -> None:
    root = tmp_path / "proc"
    shutil.copytree(FIXTURES / "1001", root / "1001")  # a real pod process
    for pid in (2001, 2002, 2003, 2004, 2005):
        (root / str(pid)).mkdir(parents=True)
    os.mkfifo(root / "2001" / "cgroup")
    (root / "2002" / "cgroup").symlink_to("/dev/zero")
    with (root / "2003" / "cgroup").open("wb") as huge:
        huge.truncate(8 << 30)  # sparse
    (root / "2004" / "cgroup").write_bytes(b"0::/" + b"x" * CGROUP_MAX_BYTES)
    (root / "2005" / "cgroup").mkdir()

    outcome = run_cli("exporter", ["attribute", "--proc-root", str(root)])

    outcome.limits_held()
    assert outcome.code == 0, outcome
    by_pid = {entry["pid"]: entry["pod_uid"] for entry in json.loads(outcome.stdout)}
    assert by_pid == {1001: POD, 2001: None, 2002: None, 2003: None, 2004: None, 2005: None}
