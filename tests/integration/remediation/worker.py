"""A controller in its own process, stepped minute by minute over stdin (the kill -9 test).

Usage: python -m tests.integration.remediation.worker PROM_URL KUBECONFIG STATE POLICIES
Each stdin line is a minute after T0 to evaluate; each answer is ``done MINUTE``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from .scenario import start_controller


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    prom, kubeconfig, state, policies = argv
    ctl = start_controller(prom, Path(kubeconfig), Path(state), Path(policies))
    say("ready")
    try:
        for line in sys.stdin:
            minute = float(line)
            ctl.evaluate([minute])
            say(f"done {line.strip()}")
    finally:
        ctl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
