"""Read ReclaimPolicy files: every finding of every file, each with file, line and field."""

from __future__ import annotations

import glob
from collections.abc import Sequence
from pathlib import Path

from guardian.model.errors import ConfigError, ConfigErrors
from guardian.model.policies import ReclaimPolicy
from guardian.model.policies_load import check_unique, parse_policies


def expand(patterns: Sequence[str]) -> list[str]:
    files: list[str] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not matches:
            raise ConfigError(f"no policy file matches {pattern!r}", field="policy_files")
        files.extend(m for m in matches if m not in files)
    return files


def load_policies(patterns: Sequence[str]) -> list[ReclaimPolicy]:
    errors: list[ConfigError] = []
    policies: list[ReclaimPolicy] = []
    for path in expand(patterns):
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            errors.append(ConfigError(f"cannot read: {exc.strerror or exc}", path=path))
            continue
        try:
            policies.extend(parse_policies(text, path))
        except ConfigErrors as exc:
            errors.extend(exc.errors)
    if not errors:
        try:
            check_unique(policies)
        except ConfigErrors as exc:
            errors.extend(exc.errors)
    if errors:
        raise ConfigErrors(errors)
    return policies
