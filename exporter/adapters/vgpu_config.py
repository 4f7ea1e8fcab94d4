"""The vGPU ratio file: a global ratio plus overrides per GPU model or UUID.

default: 2.0
models:
  "NVIDIA A100-SXM4-80GB": 4
uuids:
  GPU-0b4f6d1c-...: 7
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from exporter.engine.vgpu import VgpuRatios
from exporter.engine.yamlpos import line_of
from exporter.model.errors import ConfigError

Ratio = Annotated[float, Field(gt=0)]


class _VgpuFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: Ratio = 1.0
    models: dict[str, Ratio] = {}
    uuids: dict[str, Ratio] = {}


def load_vgpu_ratios(path: Path, default: float = 1.0) -> VgpuRatios:
    """Load and validate the file; any problem is a ConfigError naming the file and field."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"cannot read vGPU ratio file: {exc.strerror}", path=str(path)) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise ConfigError(
            f"not valid YAML: {exc}", path=str(path), line=None if mark is None else mark.line + 1
        ) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError("the vGPU ratio file must be a YAML mapping", path=str(path))
    data.setdefault("default", default)
    try:
        parsed = _VgpuFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = [p for p in err["loc"] if isinstance(p, int | str)]
        raise ConfigError(
            f"{err['msg']} (a ratio must be a number > 0)",
            path=str(path),
            line=line_of(text, loc),
            field=".".join(str(p) for p in loc),
        ) from exc
    return VgpuRatios(default=parsed.default, by_model=parsed.models, by_uuid=parsed.uuids)
