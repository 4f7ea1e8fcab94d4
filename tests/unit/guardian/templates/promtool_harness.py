"""Runs templates through the real ``promtool test rules`` and reads back the annotations."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml

from guardian.engine.golang.strconv import unquote

ALERT = "Probe"
# One series; the alert keeps its labels (and __name__, because comparisons keep it).
SERIES_LABELS = {
    "job": "node",
    "instance": "gpu-1.example.com:9100",
    "pod": "train-7f9c",
    "gpu": "0",
}
LABELS = {"__name__": "m", **SERIES_LABELS}
_ANNOTATIONS = re.compile(r"Annotations:(\{.*\})\n")
_ITEM = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*")(?:, )?')


def _parse_annotations(text: str) -> dict[str, str]:
    return {m.group(1): unquote(m.group(2)) for m in _ITEM.finditer(text[1:-1])}


def promtool_expand(value: str, templates: Sequence[str], workdir: Path) -> list[str]:
    """Expand each template for one alert whose sample value is ``value`` (promtool syntax)."""
    annotations = {f"a{i:04d}": text for i, text in enumerate(templates)}
    series = "m{" + ", ".join(f'{k}="{v}"' for k, v in SERIES_LABELS.items()) + "}"
    rules = {
        "groups": [
            {
                "name": "probe",
                "rules": [
                    # `or m != m` keeps NaN samples.
                    {"alert": ALERT, "expr": "m == m or m != m", "annotations": annotations}
                ],
            }
        ]
    }
    test = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": series, "values": value}],
                "alert_rule_test": [{"eval_time": "0m", "alertname": ALERT, "exp_alerts": []}],
            }
        ],
    }
    (workdir / "rules.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")
    (workdir / "test.yaml").write_text(yaml.safe_dump(test), encoding="utf-8")
    proc = subprocess.run(
        ["promtool", "test", "rules", "test.yaml"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    match = _ANNOTATIONS.search(proc.stdout + proc.stderr)
    if match is None:
        raise RuntimeError(f"promtool gave no annotations:\n{proc.stdout}\n{proc.stderr}")
    got = _parse_annotations(match.group(1))
    return [got.get(f"a{i:04d}", "") for i in range(len(templates))]


def record(path: Path) -> None:
    """Re-record ``parity_expected.json`` from promtool after editing ``parity_cases.py``.

    Run: ``.venv/bin/python -m tests.unit.guardian.templates.promtool_harness``.
    """
    import json
    import tempfile

    from tests.unit.guardian.templates.parity_cases import CASES

    by_value: dict[str, list[str]] = {}
    for value, text in CASES:
        by_value.setdefault(value, []).append(text)
    results: dict[tuple[str, str], str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (value, texts) in enumerate(by_value.items()):
            workdir = Path(tmp) / f"v{n}"
            workdir.mkdir()
            for text, out in zip(texts, promtool_expand(value, texts, workdir), strict=True):
                results[(value, text)] = out
    cases = [{"value": v, "template": t, "expected": results[(v, t)]} for v, t in CASES]
    path.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    from tests.unit.guardian.templates.parity_cases import PARITY_FILE

    record(PARITY_FILE)
