"""Every settings field says what it is; every duration says its unit (both programs)."""

from __future__ import annotations

import typing
from collections.abc import Iterator

import pytest
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from exporter.app.settings import ExporterSettings
from guardian.app.settings.config_file import Settings
from guardian_common.config_types import to_seconds


def _fields(model: type[BaseModel], prefix: str = "") -> Iterator[tuple[str, FieldInfo]]:
    for name, info in model.model_fields.items():
        yield prefix + name, info
        stack: list[object] = [info.annotation]
        while stack:
            annotation = stack.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                yield from _fields(annotation, f"{prefix}{name}.")
            stack.extend(typing.get_args(annotation))


def _is_duration(info: FieldInfo) -> bool:
    found = [info.annotation, *info.metadata]
    while found:
        item = found.pop()
        if getattr(item, "func", None) is to_seconds:
            return True
        found.extend(typing.get_args(item))
        found.extend(getattr(item, "__metadata__", ()))
    return False


FIELDS = [*_fields(Settings), *_fields(ExporterSettings, "exporter.")]


@pytest.mark.parametrize(("path", "info"), FIELDS, ids=[path for path, _ in FIELDS])
def test_every_field_is_documented_and_durations_give_their_unit(
    path: str, info: FieldInfo
) -> None:
    assert info.description, f"{path} has no docstring"
    if _is_duration(info):
        assert "second" in info.description.lower(), f"{path}: say the unit"


def test_the_walk_finds_nested_sections_and_durations() -> None:
    paths = dict(FIELDS)
    assert "slack.delivery.retention" in paths
    assert "remediation.leader_election.lease_duration" in paths
    assert _is_duration(paths["evaluation_interval"])
    assert _is_duration(paths["slack.idle_windows"])
    assert _is_duration(paths["exporter.collect_timeout"])
    assert not _is_duration(paths["exporter.vgpu_ratio"])
