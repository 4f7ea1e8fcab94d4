"""Every number and boolean a user writes in a file is read strictly (no true -> 1,
no "3" -> 3): each int, float and bool field of the settings models of both programs uses
the strict types of guardian_common.config_types, a duration, or says ``Strict(False)``
on purpose (values that arrive as text from environment variables)."""

from __future__ import annotations

import importlib
import typing
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from pydantic import Strict

from guardian_common.config_types import StrictModel, to_seconds

MODULES = (
    "guardian.app.settings.config_file",
    "guardian.model.policies",
    "exporter.app.settings",
    "testbed.node.scenario",
    "exporter.adapters.vgpu_config",
)


def _models() -> Iterator[type[StrictModel]]:
    for name in MODULES:
        importlib.import_module(name)
    stack: list[type[StrictModel]] = [StrictModel]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith(("guardian.", "exporter.", "testbed.")):
                yield sub


def _decided(metadata: list[Any]) -> bool:
    strict = any(isinstance(item, Strict) for item in metadata)
    return strict or any(getattr(item, "func", None) is to_seconds for item in metadata)


def _loose(annotation: Any, metadata: list[Any]) -> list[str]:
    """The int, float and bool types in ``annotation`` that pydantic would coerce."""
    if typing.get_origin(annotation) is Annotated:
        base, *extras = typing.get_args(annotation)
        return _loose(base, [*metadata, *extras])
    if annotation in (int, float, bool):
        return [] if _decided(metadata) else [annotation.__name__]
    if typing.get_origin(annotation) is typing.Literal:
        return []
    return [found for arg in typing.get_args(annotation) for found in _loose(arg, [])]


MODELS = sorted(_models(), key=lambda m: f"{m.__module__}.{m.__qualname__}")


def test_the_models_are_found() -> None:
    names = {m.__qualname__ for m in MODELS}
    assert {"Settings", "Ladder", "Limits", "ExporterSettings", "Scenario", "_VgpuFile"} <= names


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__qualname__}")
def test_numbers_and_booleans_are_strict(model: type[StrictModel]) -> None:
    loose = {
        name: found
        for name, info in model.model_fields.items()
        if (found := _loose(info.annotation, list(info.metadata)))
    }
    assert loose == {}, "use Int, Float or Bool from guardian_common.config_types"
