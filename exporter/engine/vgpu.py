"""vGPU share: how much of a GPU's memory one pod is entitled to (physical total / ratio)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class VgpuRatios:
    """A global ratio plus overrides by GPU UUID (checked first) and by model name."""

    default: float = 1.0
    by_uuid: Mapping[str, float] = field(default_factory=dict)
    by_model: Mapping[str, float] = field(default_factory=dict)

    def ratio_for(self, uuid: str, model: str, parent_uuid: str | None = None) -> float:
        for key in (uuid, parent_uuid):
            if key is not None and key in self.by_uuid:
                return self.by_uuid[key]
        return self.by_model.get(model, self.default)

    def allocated_bytes(
        self, total_bytes: int | None, uuid: str, model: str, parent_uuid: str | None = None
    ) -> float | None:
        if total_bytes is None:
            return None
        return total_bytes / self.ratio_for(uuid, model, parent_uuid)
