# ruff: noqa: E501 - the templates are data; long lines keep each case readable
"""Templates whose expansion is compared with real Prometheus 2.42 (``promtool test rules``).

Each entry is (sample value in promtool's series syntax, template). The expected outputs live in
``parity_expected.json``; they were produced by promtool, and the e2e test checks that they still
are, so the unit tests compare the engine with Prometheus's own output without running it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VALUES = {
    "1234567": 1234567.0,
    "123456": 123456.0,
    "0.00001234": 0.00001234,
    "0": 0.0,
    "-42.5": -42.5,
    "0.8734": 0.8734,
    "1e21": 1e21,
    "NaN": float("nan"),
    "Inf": float("inf"),
    "-Inf": float("-inf"),
    "1700000000.123456": 1700000000.123456,
    "93784.5": 93784.5,
    "3": 3.0,
}

_VALUE_TEMPLATES = [
    "{{ $value }}",
    "{{ .Value }}",
    "{{ humanize $value }}",
    "{{ humanize1024 $value }}",
    "{{ humanizePercentage $value }}",
    "{{ humanizeDuration $value }}",
    "{{ humanizeTimestamp $value }}",
    '{{ printf "%.4g" $value }}',
    '{{ printf "%.2f" $value }}',
    '{{ printf "%v|%g|%e|%f" $value $value $value $value }}',
    '{{ printf "%8.3f|%-10.1e|%+g|%x" $value $value $value $value }}',
    '{{ printf "%d" $value }}',
    '{{ printf "%s" $value }}',
    "{{ $value | humanize }}",
    "{{ if gt $value 100.0 }}big{{ else if lt $value 0.0 }}neg{{ else }}small{{ end }}",
    "{{ print $value }}|{{ println $value }}|{{ toTime $value }}",
]

_LABEL_TEMPLATES = [
    "{{ $labels.instance }} on {{ $labels.job }}",
    '{{ .Labels.pod }}/{{ index $labels "gpu" }}/{{ $labels.missing }}|{{ .Labels.missing }}',
    "{{ $labels }}",
    "{{ .Labels }}|{{ .ExternalLabels }}|{{ $externalLabels }}|{{ $externalURL }}",
    '{{ toUpper $labels.job }} {{ toLower "MiXeD" }} {{ title "hello gpu-world_x fOO" }}',
    "{{ stripPort $labels.instance }}|{{ stripDomain $labels.instance }}",
    '{{ stripPort "[::1]:9090" }}|{{ stripPort "nohost" }}|{{ stripDomain "10.0.0.1:80" }}',
    '{{ stripDomain "a.b.c" }}|{{ stripDomain "[fe80::1]:9" }}|{{ stripPort "a:b:c" }}',
    '{{ reReplaceAll "(.*)\\\\.example\\\\.com:(\\\\d+)" "$1 port $2" $labels.instance }}',
    '{{ reReplaceAll "x*" "-" "abxd" }}|{{ reReplaceAll "a(b)?" "[${1}]" "abaa" }}',
    '{{ reReplaceAll "(?P<h>[a-z]+)-(\\\\d)" "${h}_$2$$" $labels.instance }}',
    '{{ match "^gpu-[0-9]+" $labels.instance }}|{{ match "^node$" $labels.job }}',
    "{{ range $k, $v := $labels }}{{ $k }}={{ $v }};{{ end }}",
    "{{ range $labels }}{{ . }},{{ else }}none{{ end }}",
    "{{ with $labels.pod }}pod {{ . }}{{ end }}{{ with $labels.nope }}x{{ else }}no{{ end }}",
    '{{ if and $labels.pod (eq $labels.job "node") }}yes{{ end }}|{{ or $labels.nope "dflt" }}',
    '{{ if not $labels.nope }}empty{{ end }}|{{ len $labels }}|{{ len "héllo" }}',
    '{{ if ne $labels.gpu "1" }}ne{{ end }}|{{ if ge "b" "a" }}ge{{ end }}|{{ le 1 2 }}',
    '{{ $x := "a" }}{{ $x = "b" }}{{ $x }}{{ if true }}{{ $x = "c" }}{{ end }}{{ $x }}',
    '{{- /* comment */ -}}\n  trimmed  {{- " x " -}}  \n',
    '{{ "esc\\t\\"q\\"\\u00e9" }}|{{ `raw\\n` }}|{{ 0x1F }}|{{ 1_000 }}|{{ 1e3 }}|{{ \'a\' }}',
    '{{ html "<a href=\'x\'>&</a>" }}|{{ js "it\'s <b>\\"x\\" = 1" }}|{{ urlquery "a b&c/é" }}',
    '{{ printf "%q|%x|%X|%5s|%-5s|%.2s|%05d|%+d|%c|%U|%o|%b" "hi" "hi" 255 "ab" "ab" "abc" 42 7 65 65 8 5 }}',
    '{{ printf "%d %d" 1 }}|{{ printf "%d" 1 2 }}|{{ printf "%!" }}|{{ printf "%z" 1 }}|{{ printf "%v" nil }}',
    '{{ printf "%s" $labels }}|{{ printf "%v|%t" true true }}|{{ printf "%T %T %T" 1 "a" 1.5 }}',
    '{{ print "a" 1 2 "b" 3.5 }}|{{ print 1 2 }}|{{ println "x" 1 }}',
    '{{ humanize 1234 }}|{{ humanize "2.5e-9" }}|{{ humanize1024 "1048576" }}|{{ humanize 0.001 }}',
    '{{ humanizeDuration 3661 }}|{{ humanizeDuration "-90061" }}|{{ humanizeDuration 59.99 }}',
    '{{ humanizeDuration 0.00000012 }}|{{ humanizePercentage "0.5" }}|{{ humanize -12345 }}',
    '{{ humanizeTimestamp 0 }}|{{ humanizeTimestamp "1.5e9" }}|{{ humanize1024 -2048 }}',
    '{{ humanize "inf" }}|{{ humanize "-Inf" }}|{{ humanize "NaN" }}|{{ humanize "0x1p4" }}',
    '{{ parseDuration "1h30m" }}|{{ parseDuration "1d" }}|{{ parseDuration "0" }}|{{ parseDuration "90s5ms" }}',
    '{{ (args 1 "x").arg1 }}|{{ (args 1).arg5 }}|{{ args }}',
    '{{ safeHtml "<b>" }}|{{ graphLink "up == 0" }}|{{ tableLink "rate(x[5m])" }}',
    '{{ template "t" . }}{{ define "t" }}T:{{ .Labels.job }}{{ end }}',
    "{{ range $i, $e := (args 1 2) }}{{ $i }}:{{ $e }} {{ end }}",
    '{{ $labels.job | printf "%s-%s" "pre" }}|{{ "x" | printf "%s%s" "y" | toUpper }}',
    '{{ (index $labels "job") }}|{{ index (args "q") "arg0" }}|{{ index "abc" 1 }}',
    '{{ 3 | printf "%d" }}|{{ -3 }}|{{ 1.50 }}|{{ 017 }}|{{ 0b101 }}',
]

_ERROR_TEMPLATES = [
    '{{ humanize "abc" }}',
    "{{ humanize $labels }}",
    "{{ humanize nil }}",
    "{{ gt $value 80 }}",
    "{{ eq $value 1 }}",
    "{{ toUpper 1 }}",
    '{{ toUpper (safeHtml "x") }}',
    "{{ index $labels 1 }}",
    '{{ index "abc" 5 }}',
    "{{ len 3 }}",
    "{{ .Labels.job.x }}",
    "{{ $labels.job 1 }}",
    "{{ .Value 2 }}",
    "{{ range 5 }}x{{ end }}",
    '{{ reReplaceAll "(" "" "x" }}',
    '{{ match "[a" "x" }}',
    "{{ first (args 1) }}",
    '{{ label "x" "y" }}',
    '{{ parseDuration "5x" }}',
    '{{ parseDuration "" }}',
    "{{ humanizeTimestamp 1e300 }}",
    '{{ toTime "NaN" }}',
    "{{ humanize }}",
    "{{ humanize 1 2 }}",
    "{{ lt true false }}",
    '{{ lt 1 "a" }}',
    "{{ eq $labels $labels }}",
    "{{ eq }}",
    "{{ and }}",
    '{{ "a" 1 }}',
    '{{ $value | printf "%.1f" | humanize }}',
    '{{ template "nope" }}',
    "{{ len (args 1).arg9 }}",
    '{{ humanize1024 "1_0" }}',
    '{{ humanize "1e400" }}',
    "{{ index nil 1 }}",
    '{{ humanize "0x10" }}',
    "{{ nil | print }}",
    "{{ $labels.job.x.y }}",
    "{{ (args 1).arg0.x }}",
]

# PromQL the query templates run, with the result Prometheus gives on the probe data.
_KBA = 'vector(1) or label_replace(vector(2), "k", "b", "", "") or label_replace(vector(3), "k", "a", "", "")'
QUERIES: dict[str, list[tuple[dict[str, str], float]]] = {
    "m": [
        (
            {
                "__name__": "m",
                "gpu": "0",
                "instance": "gpu-1.example.com:9100",
                "job": "node",
                "pod": "train-7f9c",
            },
            7.0,
        )
    ],
    "vector(42)": [({}, 42.0)],
    "absent_metric": [],
    _KBA: [({}, 1.0), ({"k": "b"}, 2.0), ({"k": "a"}, 3.0)],
}

_QUERY_TEMPLATES = [
    '{{ query "m" | first | value }}|{{ with query "m" }}{{ . | first | label "job" }}{{ end }}',
    '{{ (query "vector(42)" | first).Value }}|{{ range query "m" }}{{ .Labels.pod }}={{ .Value }}{{ end }}',
    '{{ with query "absent_metric" }}some{{ else }}none{{ end }}|{{ len (query "absent_metric") }}',
    "{{ range $i, $s := query `" + _KBA + "` }}{{ $i }}:{{ $s.Labels.k }}={{ $s.Value }} {{ end }}",
    '{{ range sortByLabel "k" (query `' + _KBA + '`) }}{{ label "k" . }}{{ value . }},{{ end }}',
    '{{ query "m" | first | strvalue }}|{{ first (query "m") }}',
    '{{ query "absent_metric" | first }}',
    '{{ query "vector(42)" | first | value | humanize }}|{{ printf "%.1f" (query "m" | first | value) }}',
    '{{ query "vector(" }}',
]

CASES: list[tuple[str, str]] = [
    *((value, text) for value in VALUES for text in _VALUE_TEMPLATES),
    *(("1234567", text) for text in _LABEL_TEMPLATES),
    *(("0.25", text) for text in _ERROR_TEMPLATES),
    *(("7", text) for text in _QUERY_TEMPLATES),
]
VALUES["7"] = 7.0
VALUES["0.25"] = 0.25

_MORE_TEMPLATES = [
    'a  {{- 1 -}}  b|{{-3}}|{{ 1 -}}\n\n x|{{ 2 }} {{- "" }}|{{/* c */}}',
    '{{ range $i, $e := args 1 2 3 }}{{ if eq $i "arg1" }}{{ continue }}{{ end }}{{ $e }}{{ end }}',
    "{{ range $i, $e := args 1 2 3 }}{{ if eq $e 2 }}{{ break }}{{ end }}{{ $e }}{{ end }}",
    '{{ block "b" . }}B{{ .Labels.gpu }}{{ end }}|{{ $labels.job | len }}|{{ title "élan vital" }}',
    '{{ match "(?i)NODE" $labels.job }}|{{ reReplaceAll "\\\\s+" "_" "a  b\\tc" }}|{{ reReplaceAll "[[:digit:]]+" "#" "a1b22" }}|{{ match "a$" "a\\n" }}',
    '{{ reReplaceAll "^" ">" "x" }}|{{ reReplaceAll "$" "<" "x" }}|{{ reReplaceAll "" "." "ab" }}|{{ reReplaceAll "(a)" "$1x" "a" }}|{{ reReplaceAll "(a)" "${1}x$" "a" }}',
    '{{ printf "%6.2f|%-8.3e|%08.3f|%+.1e|% d|%x|%X|%#x|%#o" 3.14159 1234.5 -3.14159 0.000123 5 -255 3.5 255 8 }}',
    '{{ printf "%5t|%-5v|%3c|%q|%#q|%x|% x" true false 66 "a\\x00\\u2028b" "ok" "hé" "ab" }}',
    '{{ printf "%.0f|%.0f|%.0f|%.3g|%.10g|%g|%G|%E" 0.5 1.5 2.5 0.0001234 1.0 1e-5 1e-7 1e300 }}',
    '{{ printf "%*d|%-*d|%.*f" 5 42 4 7 2 3.14159 }}',
    '{{ printf "%05s|%.1q|%10.4v|%-10d|" "ab" "xyz" 3.14159 -7 }}',
]
_MORE_TEMPLATES += [
    '{{ 1i }}|{{ 1+2i }}|{{ 0i }}|{{ printf "%v %.1f" 1.5-2i 1i }}|{{ 1e+5 }}|{{ eq 1i 1i }}|{{ not 0i }}',
    "{{ 'x' }}|{{ '\\n' }}|{{ printf \"%c%q\" 'é' 'y' }}",
]
_MORE_TEMPLATES += [
    '{{ (toTime 1500000000.123).Format "2006-01-02T15:04:05.000Z07:00 Mon Jan _2 3PM" }}|{{ (toTime $value).Unix }}|{{ with toTime 1.5e9 }}{{ .Year }} {{ .Month }} {{ .Weekday }} {{ .YearDay }} {{ .UnixMilli }} {{ .Day }}{{ end }}',
    "{{ (toTime 0).Format }}",
    "{{ (toTime 0).Nope }}",
    '{{ (toTime -1.5).Format "Monday, 02-Jan-06 15:04:05.999999 MST -0700 __2 002 pm .9 ,000 Z0700 1 2 06" }}|{{ (toTime 1e9).UTC }}|{{ (toTime 1e9).String }}|{{ (toTime 0).IsZero }}|{{ (toTime 1.5e9).Nanosecond }}',
    '{{ (toTime $value).Format "15:04 on Jan 2" }}|{{ ($value | toTime).Hour }}',
]
# Go's regexp (RE2): syntax Python's re reads otherwise, and patterns it backtracks on.
_MORE_TEMPLATES += [
    '{{ match "^\\\\pL+$" "Straße" }}|{{ reReplaceAll "\\\\Q.*\\\\E" "!" "a.*b" }}|{{ reReplaceAll "\\\\B" "-" "ébé" }}|{{ reReplaceAll "(?P<n>a)|(?P<n>b)" "${n}${n}" "ab" }}|{{ reReplaceAll "(a)" "$1²" "a" }}',
    '{{ match "(a|aa)+b" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" }}|{{ reReplaceAll "^(a+)+$" "-" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" }}',
    '{{ match "\\\\C" "x" }}',
    '{{ reReplaceAll "(?<n>`" "" "x" }}',
    '{{ match "\\\\p{Kawi}" "x" }}',
]
CASES += [("1234567", text) for text in _MORE_TEMPLATES]

PARITY_FILE = Path(__file__).with_name("parity_expected.json")


def load_parity_cases() -> list[dict[str, Any]]:
    """The (value, template, expected) triples recorded from promtool 2.42."""
    data: list[dict[str, Any]] = json.loads(PARITY_FILE.read_text(encoding="utf-8"))
    return data
