"""The demo's last act: ``guardian simulate`` and ``guardian report`` over its own history.

Both run as the real commands, against the demo's Prometheus, with the demo's config and
policy; ``simulate`` reads workloads from the fake API (``--from-cluster``, the policy
selects namespaces by label). Their output is printed. The replay must find what the live
engine did: the notebook's GpuIdle and a would-be notification for it.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from guardian_common.durations import format_duration
from guardian_common.words import amount
from testbed.demo.fleet import NOTEBOOK
from testbed.demo.outcomes import Outcome
from testbed.demo.processes import ProcessGroup
from testbed.demo.timeline import Timeline

_OUTPUT_LIMIT = 20_000


@dataclass(frozen=True)
class ReplayRun:
    simulate_code: int
    simulate_output: str
    report_code: int
    report_output: str


def _run(procs: ProcessGroup, name: str, argv: list[str], timeout: float) -> tuple[int, str]:
    child = procs.python(name, ["guardian", "--log-level", "WARNING", *argv])
    try:
        code = child.process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        procs.kill(child)
        code = -9
    except Exception:
        procs.kill(child)
        raise
    return code, child.log_tail(_OUTPUT_LIMIT)


def replay_history(
    procs: ProcessGroup,
    timeline: Timeline,
    *,
    config: Path,
    kubeconfig: Path,
    since: float,
    until: float,
    policies: Path | None = None,
) -> ReplayRun:
    span = ["--config", str(config), "--since", f"{since:.3f}", "--until", f"{until:.3f}"]
    quiet = ["--progress", "none"]
    simulate = [
        "simulate",
        *span,
        *quiet,
        "--from-cluster",
        "--kubeconfig",
        str(kubeconfig),
        "--horizon",
        "30s",
        "--chunk",
        "30s",
    ]
    if policies is not None:  # the controllers read it as an object; simulate, as a file
        simulate += ["--policies", str(policies)]
    timeline.heading("replay: guardian simulate over the demo's own history")
    timeline.plain("$ guardian simulate --config guardian.yaml --from-cluster --since <start> ...")
    sim_code, sim_out = _run(procs, "guardian-simulate", simulate, 120.0)
    timeline.plain(_indent(sim_out))
    report = ["report", *span, *quiet, "--by", "namespace", "--resolution", "1s"]
    timeline.heading("report: guardian report over the same history")
    timeline.plain("$ guardian report --config guardian.yaml --by namespace --resolution 1s ...")
    rep_code, rep_out = _run(procs, "guardian-report", report, 120.0)
    timeline.plain(_indent(rep_out))
    return ReplayRun(sim_code, sim_out, rep_code, rep_out)


def _indent(text: str) -> str:
    return "\n".join(f"    {line}" for line in text.rstrip().splitlines())


def check_replay(run: ReplayRun) -> Outcome:
    notebook = str(NOTEBOOK.ref)
    notified = any(
        line.strip().split(" ", 2)[1:2] == [notebook]
        for line in run.simulate_output.splitlines()
        if "(policy " in line and ": GpuIdle firing since" in line
    )
    ok = run.simulate_code == 0 and run.report_code == 0 and notified
    detail = (
        f"simulate exit {run.simulate_code}, report exit {run.report_code}; "
        f"replayed notification for {notebook}: {'yes' if notified else 'no'}"
    )
    return Outcome("the replay of the demo's history finds the notebook", ok, detail)


_FREED = re.compile(r"^\s*freed: ([\d.,]+) GPU-hours, (\D*?)([\d.,]+)\s*$", re.MULTILINE)
_IDLE = re.compile(r"^\s*idle cost: (\D*?)([\d.,]+) of \D*?([\d.,]+) GPU spend", re.MULTILINE)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def in_cluster_time(run: ReplayRun, factor: int, elapsed: float) -> list[str]:
    """The replay's figures scaled back to a cluster's pace: the demo runs ``factor``
    times faster, so every GPU-hour it shows stands for ``factor`` of them."""
    span = format_duration(round(elapsed * factor))
    ran = format_duration(round(elapsed))
    lines = [f"The demo ran {ran} at {factor}x a cluster's pace: {span} of cluster time."]
    freed = _FREED.search(run.simulate_output)
    if freed is not None:
        hours, currency, cost = _number(freed[1]), freed[2], _number(freed[3])
        lines.append(
            f"  the reclaim freed {amount(hours * factor)} GPU-hours, about "
            f"{currency}{cost * factor:,.2f} (simulate: {freed[1]} GPU-hours x {factor})"
        )
    idle = _IDLE.search(run.report_output)
    if idle is not None:
        currency, wasted, spend = idle[1], _number(idle[2]), _number(idle[3])
        lines.append(
            f"  the report found about {currency}{wasted * factor:,.2f} of "
            f"{currency}{spend * factor:,.2f} GPU spend idle"
        )
    return lines
