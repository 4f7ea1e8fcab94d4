"""GPU-hour prices by model: one table for Slack's cost lines, ``report`` and ``simulate``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from guardian.engine.notify.findings import PriceTable
from guardian_common.config_types import Float, StrictModel


class PriceSettings(StrictModel):
    """Price per GPU-hour. ``per_model`` keys match exactly, else as a substring of the
    model name (longest wins); ``default`` prices unknown models (unset: no cost shown)."""

    currency: str = "$"
    """Symbol put before amounts."""
    default: Float | None = Field(default=None, ge=0)
    """Price per GPU-hour of a model not in ``per_model``; unset: no cost is shown
    rather than a guessed one."""
    per_model: dict[str, Annotated[Float, Field(ge=0)]] = Field(default_factory=dict)
    """Model name (or part of it) -> price per GPU-hour."""

    def table(self) -> PriceTable:
        return PriceTable(dict(self.per_model), self.default, self.currency)
