"""The shared settings vocabulary: durations in every form, zero and bounds, path resolution."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field, ValidationError

from guardian_common.config_types import (
    MAX_DURATION,
    Bool,
    ConfigPath,
    Duration,
    DurationOrZero,
    Float,
    Int,
    RelativePath,
    StrictModel,
)


class Timing(StrictModel):
    timeout: Duration = 30.0
    """Seconds; a docstring becomes the description."""
    delay: DurationOrZero = 0.0
    optional: Duration | None = None
    per_name: dict[str, Duration] = Field(default_factory=dict)


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("5s", 5.0),
        ("1m30s", 90.0),
        ("1h", 3600.0),
        ("1d", 86400.0),
        ("250ms", 0.25),
        (90, 90.0),
        (0.5, 0.5),
        ("90", 90.0),  # a number as text: flags and environment variables arrive so
        ("0.25", 0.25),
        (" 15s ", 15.0),
    ],
)
def test_durations_are_prometheus_strings_or_numbers_of_seconds(
    raw: object, seconds: float
) -> None:
    timing = Timing.model_validate(
        {"timeout": raw, "delay": raw, "optional": raw, "per_name": {"a": raw}}
    )
    assert (timing.timeout, timing.delay, timing.optional, timing.per_name) == (
        seconds,
        seconds,
        seconds,
        {"a": seconds},
    )


@pytest.mark.parametrize("raw", ["1.5m", "1x", "soon", "", "1h 30m", "30m1h", "5M"])
def test_invalid_duration_strings_say_what_is_accepted(raw: str) -> None:
    with pytest.raises(ValidationError, match="not a valid duration string") as info:
        Timing.model_validate({"timeout": raw})
    assert "15s or 1m30s" in str(info.value)


@pytest.mark.parametrize("raw", [True, False])
def test_booleans_are_not_durations(raw: bool) -> None:
    with pytest.raises(ValidationError, match="not a boolean"):
        Timing.model_validate({"delay": raw})


@pytest.mark.parametrize("raw", [0, "0", "0s", -1, "-5", float("inf"), float("nan"), ".inf"])
def test_duration_must_be_positive_and_finite(raw: object) -> None:
    with pytest.raises(ValidationError) as info:
        Timing.model_validate({"timeout": raw})
    assert info.value.errors()[0]["loc"] == ("timeout",)


@pytest.mark.parametrize(("raw", "seconds"), [(0, 0.0), ("0", 0.0), ("0s", 0.0), ("1m", 60.0)])
def test_duration_or_zero_allows_zero(raw: object, seconds: float) -> None:
    assert Timing.model_validate({"delay": raw}).delay == seconds


@pytest.mark.parametrize("raw", [-1, "-0.5", float("inf")])
def test_duration_or_zero_refuses_negative_and_infinite(raw: object) -> None:
    with pytest.raises(ValidationError):
        Timing.model_validate({"delay": raw})


def test_strict_model_is_frozen_forbids_unknown_keys_and_documents_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Timing.model_validate({"timout": "5s"})
    timing = Timing()
    with pytest.raises(ValidationError, match="frozen"):
        timing.timeout = 1.0  # type: ignore[misc]
    assert Timing.model_fields["timeout"].description == (
        "Seconds; a docstring becomes the description."
    )


class Tls(StrictModel):
    ca_file: ConfigPath | None = None
    insecure: bool = False


class Section(StrictModel):
    files: list[ConfigPath] = Field(default_factory=list)
    globs: tuple[ConfigPath, ...] = ()
    tls: Tls = Tls()
    many: list[Tls] = Field(default_factory=list)
    by_name: dict[str, Tls] = Field(default_factory=dict)
    database: Annotated[str, RelativePath(keep=frozenset({":memory:"}))] = "state.db"
    name: str = "relative/but/not/a/path"


class Config(StrictModel):
    section: Section = Section()
    optional: Section | None = None
    kubeconfig: ConfigPath | None = None


def test_resolved_takes_every_path_field_relative_to_the_base_dir() -> None:
    config = Config.model_validate(
        {
            "section": {
                "files": ["a.yaml", "/abs/b.yaml"],
                "globs": ["rules/*.yaml"],
                "tls": {"ca_file": "ca.pem"},
                "many": [{"ca_file": "one.pem"}, {}],
                "by_name": {"x": {"ca_file": "x.pem"}},
            },
            "kubeconfig": "kube/config",
        }
    )

    resolved = config.resolved(Path("/etc/guardian"))

    section = resolved.section
    assert section.files == ["/etc/guardian/a.yaml", "/abs/b.yaml"]
    assert section.globs == ("/etc/guardian/rules/*.yaml",)
    assert section.tls.ca_file == "/etc/guardian/ca.pem"
    assert [t.ca_file for t in section.many] == ["/etc/guardian/one.pem", None]
    assert section.by_name["x"].ca_file == "/etc/guardian/x.pem"
    assert section.database == "/etc/guardian/state.db"
    assert section.name == "relative/but/not/a/path"  # a plain str is not a path
    assert resolved.kubeconfig == "/etc/guardian/kube/config"
    assert resolved.optional is None
    assert config.section.files == ["a.yaml", "/abs/b.yaml"]  # the original is unchanged


def test_resolved_keeps_marked_values_and_absolute_paths() -> None:
    config = Config.model_validate(
        {"section": {"database": ":memory:", "tls": {"ca_file": "/etc/ssl/ca.pem"}}}
    )

    resolved = config.resolved(Path("/base"))

    assert resolved.section.database == ":memory:"
    assert resolved.section.tls.ca_file == "/etc/ssl/ca.pem"


def test_resolved_without_paths_returns_the_same_object() -> None:
    timing = Timing()
    assert timing.resolved(Path("/x")) is timing


class Scalars(StrictModel):
    count: Int = 0
    ratio: Float = 1.0
    on: Bool = False


@pytest.mark.parametrize(
    ("field", "raw", "reason"),
    [
        ("count", True, "must be an integer, not a boolean (true)"),
        ("count", "3", "must be an integer, not the string '3'"),
        ("count", 3.0, "valid integer"),
        ("ratio", False, "must be a number, not a boolean (false)"),
        ("ratio", "0.5", "must be a number, not the string '0.5'"),
        ("ratio", float("inf"), "finite number"),
        ("on", "yes", "must be true or false, not the string 'yes'"),
        ("on", 1, "valid boolean"),
        ("on", "true", "must be true or false, not the string 'true'"),
    ],
)
def test_strict_scalars_are_never_coerced(field: str, raw: object, reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        Scalars.model_validate({field: raw})
    (error,) = info.value.errors()
    assert error["loc"] == (field,)
    assert reason in error["msg"]


def test_strict_scalars_take_their_own_type() -> None:
    scalars = Scalars.model_validate({"count": 3, "ratio": 2, "on": True})
    assert (scalars.count, scalars.ratio, scalars.on) == (3, 2.0, True)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("99999999999999999y", "must be at most 100y, got 99999999999999999y"),
        ("101y", "must be at most 100y"),
        (1e300, "must be at most 100y"),
        ("1e300", "not a valid duration string"),
        (10**400, "valid number"),
    ],
)
def test_durations_are_at_most_100_years(raw: object, reason: str) -> None:
    # Refused at load: never an OverflowError in a timer or a date later.
    with pytest.raises(ValidationError) as info:
        Timing.model_validate({"timeout": raw, "delay": raw})
    errors = info.value.errors()
    assert [e["loc"] for e in errors] == [("timeout",), ("delay",)]
    assert all(reason in e["msg"] for e in errors)


def test_100_years_is_the_longest_duration() -> None:
    assert Timing.model_validate({"timeout": "100y"}).timeout == MAX_DURATION
