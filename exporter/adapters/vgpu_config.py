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

from pydantic import Field, ValidationError

from exporter.engine.vgpu import VgpuRatios
from exporter.model.errors import ConfigError
from guardian_common.config_types import Float, StrictModel
from guardian_common.files import read_text
from guardian_common.yamldoc import parse_yaml

Ratio = Annotated[Float, Field(gt=0)]


class _VgpuFile(StrictModel):
    default: Ratio = 1.0
    models: dict[str, Ratio] = Field(default_factory=dict)
    uuids: dict[str, Ratio] = Field(default_factory=dict)


def load_vgpu_ratios(path: Path, default: float = 1.0) -> VgpuRatios:
    """Load and validate the file; any problem is a ConfigError naming the file and field."""
    doc = parse_yaml(read_text(path, what="vGPU ratio file"), str(path))
    data = doc.data if doc.data is not None else {}
    if not isinstance(data, dict):
        raise ConfigError("the vGPU ratio file must be a YAML mapping", path=str(path), line=1)
    data.setdefault("default", default)
    try:
        parsed = _VgpuFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(p for p in err["loc"] if isinstance(p, int | str))
        raise doc.error(
            f"{err['msg']} (a ratio must be a number > 0)",
            loc,
            ".".join(str(p) for p in loc),
        ) from None
    return VgpuRatios(default=parsed.default, by_model=parsed.models, by_uuid=parsed.uuids)
