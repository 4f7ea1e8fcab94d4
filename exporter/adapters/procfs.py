"""Reads a (host) /proc tree. The root is configurable: in a pod it is the host's /proc."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from guardian_common.files import read_regular_file

logger = logging.getLogger(__name__)

# Linux pid_max is at most 2^22; anything outside (0, 2^22] is a scrambled NVML struct.
PID_MAX = 1 << 22
# A cgroup file has one line per hierarchy (about 13 on cgroup v1, 1 on v2), well under
# 4 KiB; more means it is not one (under --proc-root it could be anything, /dev/zero too).
CGROUP_MAX_BYTES = 64 << 10


def valid_pid(pid: int) -> bool:
    return 0 < pid <= PID_MAX


class ProcReader:
    def __init__(self, proc_root: Path) -> None:
        self.proc_root = proc_root
        self._root = str(proc_root)

    def read_cgroup(self, pid: int) -> str | None:
        """The process's cgroup file, or None if it has gone or cannot be read."""
        if not valid_pid(pid):
            return None
        # Regular files only, bounded, non-blocking: a FIFO or /dev/zero under --proc-root
        # must not hang or exhaust the collector. Plain os calls: this runs for every GPU
        # process on every cycle.
        try:
            data = read_regular_file(f"{self._root}/{pid}/cgroup", CGROUP_MAX_BYTES)
        except FileNotFoundError:
            return None  # the process exited between the NVML call and now
        except OSError as exc:  # also not a regular file, or too large
            logger.debug("cannot read cgroup of pid %s: %s", pid, exc)
            return None
        return data.decode(errors="replace")

    def pids(self) -> list[int]:
        """Every numeric directory under the root, sorted."""
        try:
            names = os.listdir(self.proc_root)
        except OSError as exc:
            raise OSError(f"cannot list {self.proc_root}: {exc.strerror}") from exc
        return sorted(int(n) for n in names if n.isdigit() and (self.proc_root / n).is_dir())
