"""ConfigError is one line per finding, whatever the input put in it."""

from __future__ import annotations

from guardian_common.errors import MAX_REPORTED, ConfigError, ConfigErrors


def test_control_characters_are_escaped() -> None:
    error = ConfigError("bad\nvalue \x1b[31mred", path="a\tb.yaml", line=3, field="k\x00")
    assert str(error) == "a\\tb.yaml:3: k\\x00: bad\\nvalue \\x1b[31mred"
    assert "\n" not in str(error)


def test_many_findings_are_cut_to_the_first_hundred_and_a_count() -> None:
    errors = ConfigErrors([ConfigError("x", path="f", line=i) for i in range(1, 251)])
    assert len(errors.errors) == MAX_REPORTED + 1
    assert str(errors).splitlines()[-1] == "... and 150 more finding(s)"
    merged = ConfigErrors([*errors.errors, ConfigError("y", path="g")])
    assert str(merged).splitlines()[-1] == "... and 151 more finding(s)"
