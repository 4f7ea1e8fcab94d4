"""`guardian-exporter attribute` and the startup errors of `serve`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exporter.cli import main
from testbed.node.__main__ import main as node_main

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "exporter"


def test_attribute_prints_one_json_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attribute", "--proc-root", str(FIXTURES / "proc")]) == 0
    result = json.loads(capsys.readouterr().out)
    expected = json.loads((FIXTURES / "expected.json").read_text())
    assert [r["pid"] for r in result] == sorted(int(p) for p in expected)
    assert all(set(r) == {"pid", "pod_uid", "container_id"} for r in result)


def test_attribute_prints_the_expected_answer_for_every_fixture_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["attribute", "--proc-root", str(FIXTURES / "proc")]) == 0
    printed = {
        str(r["pid"]): (r["pod_uid"], r["container_id"])
        for r in json.loads(capsys.readouterr().out)
    }
    expected = json.loads((FIXTURES / "expected.json").read_text())
    assert printed == {pid: (e["pod_uid"], e["container_id"]) for pid, e in expected.items()}


def test_attribute_one_pid(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attribute", "--proc-root", str(FIXTURES / "proc"), "--pid", "1017"]) == 0
    assert json.loads(capsys.readouterr().out) == [
        {"pid": 1017, "pod_uid": None, "container_id": None}
    ]


def test_attribute_missing_root(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attribute", "--proc-root", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "--port"),
        (
            ["--vgpu-config", "/nonexistent-vgpu.yaml"],
            "/nonexistent-vgpu.yaml: cannot read vGPU ratio file",
        ),
    ],
)
def test_serve_configuration_errors_exit_2_with_a_clear_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *argv]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err
    assert message in err


def test_the_simulated_node_needs_a_readable_scenario(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert node_main(["serve"]) == 2
    assert "serve needs --scenario FILE" in capsys.readouterr().err
    assert node_main(["serve", "--scenario", "/nonexistent.yaml"]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err
    assert "/nonexistent.yaml: cannot read scenario" in err


def test_the_product_has_no_simulated_backend(capsys: pytest.CaptureFixture[str]) -> None:
    # The scenario backend lives in the test bed; the shipped exporter reads NVML only.
    assert main(["serve", "--backend", "simulated"]) == 2
    err = capsys.readouterr().err
    assert "configuration error" in err
    assert "--backend" in err
    assert "nvml" in err
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--scenario", "x.yaml"])
    assert exit_.value.code == 2
    assert "unrecognized arguments: --scenario x.yaml" in capsys.readouterr().err


def test_serve_rejects_a_bad_vgpu_ratio_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("GUARDIAN_EXPORTER_VGPU_RATIO", "0")
    assert main(["serve"]) == 2
    assert "GUARDIAN_EXPORTER_VGPU_RATIO (environment)" in capsys.readouterr().err
