"""Parse errors: Go's reason and line (as promtool check rules 2.42 reports them), plus a column."""

from __future__ import annotations

import pytest

from guardian.engine.templates import TemplateParseError, parse_alert_template, parse_template

# (template, line, reason) — the reason and line are exactly what Prometheus 2.42 reports.
GO_PARSE_ERRORS = [
    ("{{ }}", 1, "missing value for command"),
    ("{{ $x }}", 1, 'undefined variable "$x"'),
    ("{{ nofunc 1 }}", 1, 'function "nofunc" not defined'),
    ("{{ if }}", 1, "missing value for if"),
    ("{{ if 1 }}x", 1, "unexpected EOF"),
    ("{{ end }}", 1, "unexpected {{end}}"),
    ("{{ else }}", 1, "unexpected {{else}}"),
    ("{{ .a | 1 }}", 1, "non executable command in pipeline stage 2"),
    ('{{ "unterminated }}', 1, "unterminated quoted string"),
    ("{{ 1a }}", 1, 'bad number syntax: "1a"'),
    ("{{ ( 1 }}", 1, "unclosed left paren"),
    ("{{ 1 ) }}", 1, 'unexpected ")" in command'),
    ("{{ /* x */ }}", 1, 'unexpected "/" in command'),
    ("{{/* x */ y}}", 1, "comment ends before closing delimiter"),
    ("{{/* x", 1, "unclosed comment"),
    ('{{ .a.b" }}', 1, "bad character U+0022 '\"'"),
    ('{{ "a".b }}', 1, 'unexpected . after term "\\"a\\""'),
    ("line1\n{{ if true }}\n{{ else }}{{ else }}\n{{ end }}", 3, "expected end; found {{else}}"),
    ("{{ range $a, $b, $c := . }}{{ end }}", 1, "too many declarations in range"),
    ("{{ $x := 1 }}{{ $y }}", 1, 'undefined variable "$y"'),
    ("{{ break }}", 1, "{{break}} outside {{range}}"),
    ("{{ template x }}", 1, 'unexpected "x" in template clause'),
    ("{{ ^ }}", 1, 'unexpected "^" in command'),
    ("{{ 99999999999999999999 }}", 1, 'integer overflow: "99999999999999999999"'),
    ('{{ "\\q" }}', 1, "invalid syntax"),
    ("{{ , }}", 1, 'unexpected "," in command'),
    ("{{ if true\n}}", 2, "unexpected EOF"),
    ("{{ 1 \n 2 ", 2, "unclosed action started at __alert_A:1"),
    ("{{ with $x := 1 }}{{ end }}{{ $x }}", 1, 'undefined variable "$x"'),
    ("{{$x=1}}", 1, "bad character U+003D '='"),
    ("{{ .Labels.a-b }}", 1, "bad character U+002D '-'"),
    ("{{ -}}", 1, "missing value for command"),
    ("{{ if 1 }}{{ else with 2 }}{{ end }}", 1, "unexpected <with> in else"),
    ("{{ range $i, := . }}{{ end }}", 1, "range can only initialize variables"),
    ("{{ with $x, $y := . }}{{ end }}", 1, "too many declarations in with"),
    ("{{ true.x }}", 1, 'unexpected . after term "true"'),
    ("{{ 'ab' }}", 1, "malformed character constant: 'ab'"),
    ("{{ '' }}", 1, "invalid syntax"),
    ("{{ 1.5e }}", 1, 'illegal number syntax: "1.5e"'),
    ("{{ 0x1p }}", 1, 'illegal number syntax: "0x1p"'),
    ("{{ 1+2 }}", 1, 'bad number syntax: "1+2"'),
    (
        '{{ define "x" }}a{{ end }}{{ define "x" }}b{{ end }}',
        1,
        'template: multiple definition of template "x"',
    ),
    ("{{ || }}", 1, 'unexpected "|" in command'),
    ("{{ ( ) }}", 1, "missing value for parenthesized pipeline"),
    ('{{ "line\nbreak" }}', 1, "unterminated quoted string"),
    ("{{ continue }}", 1, "{{continue}} outside {{range}}"),
    ("{{ range . }}{{ continue 1 }}{{ end }}", 1, 'unexpected "1" in {{continue}}'),
    ("{{ with }}{{ end }}", 1, "missing value for with"),
    ("{{ .x := 1 }}", 1, 'unexpected ":=" in operand'),
]

# Accepted by Prometheus 2.42 (promtool check rules), so they must parse here too.
GO_VALID = [
    '{{ index .Labels "a-b" }}',
    "{{-1}}",
    "{{ 1 -}}",
    "{{ range . }}{{ break }}{{ end }}",
    "{{ range $i := . }}{{ end }}",
    "{{ $.Labels }}{{ $ }}{{ (1).x }}{{ (.Labels).job }}{{ 1 2 }}{{ nil }}",
    "{{ '\\n' }}{{ 1i }}{{ 1+2i }}{{ 0i }}{{ 1e+5 }}",
    '{{ template "x" }}{{ block "y" . }}{{ end }}',
    "a {{/* c */ -}} b",
    "{{ $x := 1 }}{{ range $x }}{{ $x := 2 }}{{ end }}{{ $x }}",
    '{{ "a" "b" }}{{ .Labels | }}{{ 1 | printf }}',
    "{{ `multi\nline` }}",
]


@pytest.mark.parametrize(("text", "line", "reason"), GO_PARSE_ERRORS)
def test_parse_errors_read_like_go(text: str, line: int, reason: str) -> None:
    with pytest.raises(TemplateParseError) as caught:
        parse_alert_template(text, "A")
    err = caught.value
    assert (err.line, err.reason) == (line, reason)
    assert str(err) == f"template: __alert_A:{line}:{err.column}: {reason}"
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("{{ nofunc }}", 1, 4),  # columns count from the user's text, not the preamble
        ("ab\n  {{ $nope }}", 2, 6),
        ("é{{ nofunc }}", 1, 6),  # bytes, as Go counts
    ],
)
def test_parse_error_position_is_in_the_users_text(text: str, line: int, column: int) -> None:
    with pytest.raises(TemplateParseError) as caught:
        parse_template(text, "t")
    assert (caught.value.line, caught.value.column) == (line, column)


@pytest.mark.parametrize("text", GO_VALID)
def test_what_prometheus_accepts_parses(text: str) -> None:
    assert parse_alert_template(text, "A") is not None


def test_without_preamble_the_alert_variables_are_undefined() -> None:
    with pytest.raises(TemplateParseError, match=r'undefined variable "\$labels"'):
        parse_template("{{ $labels.job }}", preamble=False)
    assert parse_template("{{ .Labels.job }}", preamble=False) is not None
