"""promtool accepts the demo profile's compressed rule pack, as the demo checks at start."""

from __future__ import annotations

import subprocess
from pathlib import Path

from guardian.adapters.local_prometheus import PrometheusBinaries
from testbed.demo.profile import DemoProfile, write_profile_rules

ROOT = Path(__file__).resolve().parents[3]


def test_promtool_accepts_the_compressed_pack(tmp_path: Path) -> None:
    promtool = PrometheusBinaries.find().promtool
    for factor in (1, 60, 3600):
        rules = write_profile_rules(
            sorted((ROOT / "rules/guardian").glob("*.yaml")),
            tmp_path / str(factor),
            DemoProfile(factor=factor),
        )
        result = subprocess.run(
            [promtool, "check", "rules", *map(str, rules)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stdout + result.stderr
