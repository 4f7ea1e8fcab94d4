"""What a picture of an alert's evidence shows: the records the notifier's planner makes
and its delivery draws (stored as JSON in the outbox row)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


@dataclass(frozen=True, slots=True)
class PictureQuery:
    """One alert's picture: its series (legend, PromQL template), noise floor, and the
    series whose first sample says when the pod got the GPU."""

    title: str
    series: tuple[tuple[str, str], ...]
    floor: float | None = None
    allocation: str | None = None


@dataclass(frozen=True, slots=True)
class PictureRules:
    queries: Mapping[str, PictureQuery] = field(default_factory=dict)
    margin: float = 0.25  # of the idle window, shown before it starts


class Moment(StrEnum):
    OPENED = "opened"
    RECLAIMED = "reclaimed"


@dataclass(frozen=True, slots=True)
class PictureRequest:
    """A picture to draw and upload: stored as JSON in the outbox row."""

    episode: str
    moment: Moment
    title: str
    start: float
    end: float
    step: float
    window: tuple[float, float]
    series: tuple[tuple[str, str], ...]
    floor: float | None
    allocation: str | None
    filename: str
    alt_text: str
    comment: str

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            f: getattr(self, f) for f in self.__dataclass_fields__ if f != "moment"
        }
        data["moment"] = self.moment.value
        data["window"] = list(self.window)
        data["series"] = [list(s) for s in self.series]
        return data

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> PictureRequest:
        return cls(
            episode=str(d["episode"]),
            moment=Moment(d["moment"]),
            title=str(d["title"]),
            start=float(d["start"]),
            end=float(d["end"]),
            step=float(d["step"]),
            window=(float(d["window"][0]), float(d["window"][1])),
            series=tuple((str(a), str(b)) for a, b in d["series"]),
            floor=None if d["floor"] is None else float(d["floor"]),
            allocation=d["allocation"],
            filename=str(d["filename"]),
            alt_text=str(d["alt_text"]),
            comment=str(d["comment"]),
        )
