"""The built image starts: its programs run from its own root filesystem, mounted
read-only, as its own user, with nothing of the development machine (no venv, no
sources): `guardian --version`, `guardian rules check` on the shipped packs, the exporter
serving and scraped once (and the image's health check asking it), and `guardian eval`
against a real Prometheus.
"""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from guardian.adapters.local_prometheus import free_loopback_port
from guardian_common.words import plural
from testbed.node.stubnvml import SCENARIO_ENV, build_stub
from tests.integration.remediation.scenario import at, fleet_metrics

from .conftest import Image

pytestmark = pytest.mark.e2e

RULES = Path("/usr/share/gpu-guardian/rules")


def _rule_files(image: Image, pack: str) -> list[str]:
    found = sorted((image.root / RULES.relative_to("/") / pack).glob("*.yaml"))
    assert found, f"no {pack} rule pack in the image"
    return [str(RULES / pack / p.name) for p in found]


def test_reports_the_version_it_was_built_as(image: Image) -> None:
    assert image.user == "65532:65532"
    result = image.run(["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"guardian {image.record['version']}"


def test_the_root_filesystem_is_read_only_and_nothing_is_written(image: Image) -> None:
    write = image.run(["-", "python3", "-c", "open('/opt/gpu-guardian/x', 'w')"])
    assert write.returncode != 0
    assert "Read-only file system" in write.stderr
    who = image.run(["-", "python3", "-c", "import os; print(os.getuid(), os.getgid())"])
    assert who.stdout.split() == ["65532", "65532"]


@pytest.mark.parametrize("pack", ["guardian", "dcgm"])
def test_rules_check_accepts_the_shipped_packs(image: Image, pack: str) -> None:
    files = _rule_files(image, pack)
    result = image.run(["rules", "check", *files])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"ok: {plural(len(files), 'file')}, "), result.stdout


def _get(port: int, path: str) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
        return str(response.read().decode())


def _scrape_once_ready(port: int, deadline: float) -> str:
    """/metrics, once /readyz says the first collection is done."""
    while True:
        try:
            _get(port, "/readyz")
            return _get(port, "/metrics")
        except OSError:
            assert time.monotonic() < deadline, "the exporter never became ready"
            time.sleep(0.2)


# What the NVIDIA container runtime gives the exporter: libnvidia-ml.so.1 from the driver.
# Here the test bed's stub library stands in for it, driven by this scenario.
ONE_GPU = (
    "init 0\ndriver 550.54.15\ngpu GPU-smoke-1 85899345920 1048576 37 40 70000 1000 NVIDIA H100\n"
)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = build_stub(tmp_path_factory.mktemp("driver")).parent
    (directory / "scenario").write_text(ONE_GPU, encoding="utf-8")
    directory.chmod(0o755)  # pytest's are the owner's only; the image's user reads this one
    return directory


@pytest.mark.parametrize("with_driver", [False, True], ids=["no-driver", "stub-driver"])
def test_the_exporter_serves_and_its_health_check_answers(
    image: Image, tmp_path: Path, driver: Path, with_driver: bool
) -> None:
    port = free_loopback_port()
    argv = ["guardian-exporter", "serve", "--backend", "nvml", "--kubernetes", "off"]
    argv += ["--listen-address", "127.0.0.1", "--port", str(port), "--node-name", "smoke"]
    env = {"LD_LIBRARY_PATH": "/tmp/nvidia", SCENARIO_ENV: "/tmp/nvidia/scenario"}
    binds = {str(driver): "/tmp/nvidia"} if with_driver else {}
    proc = image.start(["-", *argv], binds=binds, env=env if with_driver else {})
    try:
        metrics = _scrape_once_ready(port, time.monotonic() + 30)
        if with_driver:
            assert 'guardian_exporter_nvml_up{node="smoke"} 1.0' in metrics, metrics
            assert 'uuid="GPU-smoke-1"' in metrics
            assert "guardian_gpu_utilization_ratio{" in metrics
        else:  # no GPU driver: the exporter says so instead of failing
            assert 'guardian_exporter_nvml_up{node="smoke"} 0.0' in metrics, metrics
            assert 'errors_total{kind="library_not_found",node="smoke",op="init"} 1.0' in metrics
        # The image's HEALTHCHECK program, given the command line it would read as PID 1.
        cmdline = tmp_path / "cmdline"
        cmdline.write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        check = image.run(
            ["-", "/usr/local/bin/gpu-guardian-healthcheck", "/tmp/in/cmdline"],
            binds={str(cmdline): "/tmp/in/cmdline"},
        )
        assert check.returncode == 0, check.stderr
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=15)
    assert "Traceback" not in out, out


def test_eval_against_a_real_prometheus(image: Image, prometheus: Any, tmp_path: Path) -> None:
    prom = prometheus(openmetrics=fleet_metrics())
    config = tmp_path / "guardian.yaml"
    pack = "/usr/share/gpu-guardian/rules/guardian/*.yaml"
    config.write_text(
        f"prometheus:\n  url: {prom.url}\n  timeout: 10s\nrule_files: ['{pack}']\n"
        "state_path: /tmp/state/state.db\n",
        encoding="utf-8",
    )
    result = image.run(
        ["eval", "--config", "/tmp/in/guardian.yaml", "--at", str(int(at(90))), "--json"],
        binds={str(config): "/tmp/in/guardian.yaml"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    health = {r["health"] for g in report["groups"] for r in g["rules"]}
    assert health == {"ok"}, report
    # One evaluation: an alert whose `for` has not run yet is pending (eval never acts).
    active = {
        (a["labels"]["alertname"], a["labels"].get("pod", "")): a["state"]
        for g in report["groups"]
        for a in g["alerts"]
    }
    assert active[("GpuIdle", "idle-train-abc-1")] == "pending", active
    assert ("GpuIdle", "busy-serve-abc-1") not in active


def test_nothing_of_the_development_machine_is_inside(image: Image) -> None:
    root = image.root
    venv = root / "opt/gpu-guardian"
    site = venv / "lib/python3.11/site-packages"
    assert (venv / "bin/guardian").is_file()
    assert (venv / "bin/guardian-exporter").is_file()
    for absent in ("testbed", "tests", "pip", "setuptools", "plotly", "_pytest"):
        assert not (site / absent).exists(), f"{absent} in the image"
    for compiler in ("gcc", "cc", "c++", "x86_64-linux-gnu-gcc-12", "make"):
        assert not (root / "usr/bin" / compiler).exists(), f"{compiler} in the image"
    assert not (root / "src").exists(), "the build's sources came over"


def test_the_html_report_needs_no_plotting_library(
    image: Image, prometheus: Any, tmp_path: Path
) -> None:
    """`guardian report --format html` from the image: the page draws its own SVG charts."""
    prom = prometheus(openmetrics=fleet_metrics())
    config = tmp_path / "guardian.yaml"
    pack = "/usr/share/gpu-guardian/rules/guardian/*.yaml"
    config.write_text(f"prometheus:\n  url: {prom.url}\nrule_files: ['{pack}']\n", encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir(mode=0o777)
    out.chmod(0o777)  # the image's user writes the report here
    window = ["--since", str(int(at(0))), "--until", str(int(at(120)))]
    html = ["--format", "html", "--output", "/tmp/out/report.html", "--progress", "none"]
    result = image.run(
        ["report", "--config", "/tmp/in/guardian.yaml", *window, *html],
        binds={str(config): "/tmp/in/guardian.yaml", str(out): "/tmp/out:rw"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert page.count("<svg") >= 3
    assert "plotly" not in page.lower()
