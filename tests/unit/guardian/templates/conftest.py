"""Shared data for the template tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PARITY_FILE = Path(__file__).with_name("parity_expected.json")


def load_parity_cases() -> list[dict[str, Any]]:
    """The (value, template, expected) triples recorded from promtool 2.42."""
    data: list[dict[str, Any]] = json.loads(PARITY_FILE.read_text(encoding="utf-8"))
    return data
