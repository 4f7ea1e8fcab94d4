"""``slack.pictures``: the evidence as a picture in each episode's thread.

Per alert name, the series to draw (legend -> PromQL, with ``$label`` standing for the
alert's label value), the rule's noise floor and the allocation series. The defaults
draw the shipped guardian pack's alerts; for the DCGM pack (or your own rules) name your
series here. Each query is checked at load: it must parse as PromQL.
"""

from __future__ import annotations

from pydantic import Field, field_validator

from guardian.engine.notify.picture_plan import fill
from guardian.engine.promql import PromQLError, parse_expr
from guardian.model.evidence_picture import PictureQuery, PictureRules
from guardian.model.labels import LabelSet
from guardian_common.config_types import Bool, Float, StrictModel

# No cluster matcher: an alert's cluster label may be an external label, which the
# series inside that Prometheus do not carry; a GPU's UUID is unique across clusters.
_DEVICE = 'node="$node",uuid="$uuid"'
_POD = f'{_DEVICE},namespace="$namespace",pod="$pod"'
_ALLOCATION = f"max(guardian_pod_gpu_allocated{{{_POD}}})"


class PictureQuerySettings(StrictModel):
    title: str = Field(min_length=1, max_length=120)
    """What the picture shows, e.g. "GPU activity"."""
    series: dict[str, str] = Field(min_length=1, max_length=6)
    """Legend -> PromQL whose values are ratios (0-1); ``$label``: the alert's label."""
    floor: Float | None = Field(default=None, ge=0.0, le=1.0)
    """The rule's threshold, drawn as a dashed line (a ratio)."""
    allocation: str | None = None
    """A series that is 1 while the pod holds the GPU: its start is marked."""

    @field_validator("series")
    @classmethod
    def _series_parse(cls, value: dict[str, str]) -> dict[str, str]:
        for legend, expr in value.items():
            if not legend.strip():
                raise ValueError("a series needs a legend")
            _check(expr)
        return value

    @field_validator("allocation")
    @classmethod
    def _allocation_parses(cls, value: str | None) -> str | None:
        if value is not None:
            _check(value)
        return value

    def query(self) -> PictureQuery:
        return PictureQuery(self.title, tuple(self.series.items()), self.floor, self.allocation)


def _check(template: str) -> None:
    try:
        parse_expr(fill(template, LabelSet({})))
    except PromQLError as exc:
        raise ValueError(f"not PromQL ({exc}): {template}") from exc


def _defaults() -> dict[str, PictureQuerySettings]:
    busy = f"rate(guardian_gpu_busy_seconds_total{{{_DEVICE}}}[2m])"
    used = f"max(guardian_gpu_memory_used_bytes{{{_DEVICE}}})"
    total = f"max(guardian_gpu_memory_total_bytes{{{_DEVICE}}} > 0)"
    return {
        "GpuIdle": PictureQuerySettings(
            title="GPU activity",
            series={
                "utilization": f"guardian_gpu_utilization_ratio{{{_DEVICE}}}",
                "busy time (2m rate)": busy,
            },
            floor=0.05,
            allocation=_ALLOCATION,
        ),
        "GpuShareIdle": PictureQuerySettings(
            title="the pod's share of GPU activity",
            series={
                "the pod's SM use": f"sum(guardian_pod_gpu_sm_utilization_ratio{{{_POD}}})",
                "the whole GPU": f"guardian_gpu_utilization_ratio{{{_DEVICE}}}",
            },
            floor=0.05,
            allocation=_ALLOCATION,
        ),
        "GpuMemoryUnderutilized": PictureQuerySettings(
            title="GPU memory in use",
            series={"memory used / total": f"{used} / {total}"},
            floor=0.2,
            allocation=_ALLOCATION,
        ),
    }


class PictureSettings(StrictModel):
    enabled: Bool = True
    """Upload the evidence picture when an episode opens and when it is reclaimed (a bot
    token with ``files:write``; never with a webhook). Failures never delay a message."""
    alerts: dict[str, PictureQuerySettings] = Field(default_factory=_defaults)
    """Alert name -> its picture; an alert not named here gets none."""

    def rules(self) -> PictureRules:
        return PictureRules({name: q.query() for name, q in self.alerts.items()})
