"""Run CLI cases under resource limits: ``python -m tests.hostile.runner guardian|exporter|node``.

``node`` is the exporter's command line on the test bed's simulated node (``--scenario``).

Reads one JSON argv list per line on stdin and answers one JSON result per line. The CLI
is imported once; each case runs in a forked child that sets its limits first, as a
``preexec_fn`` would, then calls the CLI's ``main``:

- RLIMIT_CPU: 2 s of CPU for the case (a fork starts at zero), then SIGXCPU;
- RLIMIT_AS: 100 MiB more address space than the child starts with, then MemoryError;
- an alarm after 20 s of wall time, so a read that blocks (a FIFO) fails instead of hanging.

Why a fork and not a fresh ``python -m guardian``: importing the whole ``guardian`` CLI
costs 1.2-1.8 s of CPU on a loaded machine, which would leave a 2 s limit measuring the
imports, not the file loaders. (``test_entry_points.py`` also runs the real entry points.)
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Sequence
from typing import Any

CPU_SECONDS = 2
MEMORY_BYTES = 100 << 20
HANG_SECONDS = 20
CRASHED = 70  # an exception escaped main: a traceback, never a clean configuration error

Main = Callable[[Sequence[str]], int]


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def _child(cli: Main, argv: list[str], out: int, err: int) -> None:
    code = CRASHED
    try:
        os.dup2(out, 1)
        os.dup2(err, 2)
        limit = _vm_size() + MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        resource.setrlimit(resource.RLIMIT_CPU, (CPU_SECONDS, CPU_SECONDS + 1))
        signal.alarm(HANG_SECONDS)
        code = cli(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run_case(cli: Main, argv: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:
            _child(cli, argv, out.fileno(), err.fileno())
        _, status, usage = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        return {
            "code": os.waitstatus_to_exitcode(status),
            "stdout": out.read().decode(errors="replace"),
            "stderr": err.read().decode(errors="replace"),
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "max_rss_bytes": usage.ru_maxrss * 1024,
        }


def main() -> None:
    cli: Main
    if sys.argv[1] == "guardian":
        from guardian.cli import main as cli
    elif sys.argv[1] == "node":
        from testbed.node.__main__ import main as cli
    else:
        from exporter.cli import main as cli
    for line in sys.stdin:
        result = run_case(cli, json.loads(line))
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
