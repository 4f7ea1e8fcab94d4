"""Prometheus 2.42's template functions (``template/template.go``), as pure functions."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from guardian.engine.golang.fmt import sprint, sprintf
from guardian.engine.golang.reflect import type_name
from guardian.engine.golang.regexp import RegexpError, compile_regexp, must_compile
from guardian.engine.golang.strconv import format_go_value, go_quote, parse_float
from guardian.engine.golang.time import Time
from guardian.engine.templates.builtins import query_escape
from guardian.engine.templates.errors import FuncError
from guardian.engine.templates.signature import Func
from guardian.engine.templates.values import (
    HTML,
    ArgsMap,
    QueryResult,
    QuerySample,
)

_NIL_POINTER = "runtime error: invalid memory address or nil pointer dereference"


def _to_float(value: object) -> float:
    """``convertToFloat``: float64, int kinds, or a string read by ``strconv.ParseFloat``."""
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is str:
        try:
            return parse_float(value)
        except ValueError as exc:
            raise FuncError(str(exc)) from None
    raise FuncError(f"can't convert {type_name(value)} to float")


def _g4(v: float) -> str:
    return sprintf("%.4g", v)


def _scaled_up(v: float, base: int, prefixes: tuple[str, ...]) -> str:
    """``v`` divided by ``base`` while it is that large, with the prefix it got to."""
    prefix = ""
    for p in prefixes:
        if abs(v) < base:
            break
        prefix = p
        v /= base
    return _g4(v) + prefix


def _scaled_down(v: float) -> str:
    """``v`` times 1000 while it is under 1, with the prefix it got to."""
    prefix = ""
    for p in ("m", "u", "n", "p", "f", "a", "z", "y"):
        if abs(v) >= 1:
            break
        prefix = p
        v *= 1000
    return _g4(v) + prefix


def humanize(value: object) -> str:
    v = _to_float(value)
    if v == 0 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    if abs(v) >= 1:
        return _scaled_up(v, 1000, ("k", "M", "G", "T", "P", "E", "Z", "Y"))
    return _scaled_down(v)


def humanize1024(value: object) -> str:
    v = _to_float(value)
    if abs(v) <= 1 or math.isnan(v) or math.isinf(v):
        return _g4(v)
    return _scaled_up(v, 1024, ("ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"))


def humanize_duration(value: object) -> str:
    v = _to_float(value)
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    if v == 0:
        return _g4(v) + "s"
    if abs(v) >= 1:
        sign = ""
        if v < 0:
            sign, v = "-", -v
        duration = _go_int64(v)
        seconds = _rem(duration, 60)
        minutes = _rem(_quo(duration, 60), 60)
        hours = _rem(_quo(_quo(duration, 60), 60), 24)
        days = _quo(_quo(_quo(duration, 60), 60), 24)
        if days:
            return f"{sign}{days}d {hours}h {minutes}m {seconds}s"
        if hours:
            return f"{sign}{hours}h {minutes}m {seconds}s"
        if minutes:
            return f"{sign}{minutes}m {seconds}s"
        return f"{sign}{_g4(v)}s"
    return _scaled_down(v) + "s"


def _go_int64(v: float) -> int:
    """``int64(v)`` on amd64: truncation, and the minimum int64 when out of range."""
    if math.isnan(v) or not -(2.0**63) <= v < 2.0**63:
        return -(2**63)
    return int(v)


def _quo(a: int, b: int) -> int:
    """Go's integer division, truncating toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: int, b: int) -> int:
    return a - b * _quo(a, b)


def humanize_percentage(value: object) -> str:
    return _g4(_to_float(value) * 100) + "%"


def _float_to_time(v: float) -> Time:
    if math.isnan(v) or math.isinf(v):
        raise FuncError("value is NaN or Inf")
    nanos = v * 1e9
    if nanos > 2.0**63 or nanos < -(2.0**63):
        raise FuncError(
            f"{format_go_value(v)} cannot be represented as a nanoseconds timestamp "
            "since it overflows int64"
        )
    # model.TimeFromUnixNano keeps whole milliseconds, truncating toward zero.
    millis = _quo(_go_int64(nanos), 1_000_000)
    return Time(millis * 1_000_000)


def humanize_timestamp(value: object) -> str:
    v = _to_float(value)
    if math.isnan(v) or math.isinf(v):
        return _g4(v)
    return sprint(_float_to_time(v))


def to_time(value: object) -> Time:
    return _float_to_time(_to_float(value))


# prometheus/common's durationRE.
_DURATION_RE = must_compile(
    "^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$"
)
_DURATION_UNITS_MS = (
    365 * 86_400_000,
    7 * 86_400_000,
    86_400_000,
    3_600_000,
    60_000,
    1000,
    1,
)


def parse_duration(text: str) -> float:
    """``model.ParseDuration`` (Prometheus duration syntax) in seconds."""
    if text == "0":
        return 0.0
    if text == "":
        raise FuncError("empty duration string")
    match = _DURATION_RE.search(text)
    if match is None:
        raise FuncError(f"not a valid duration string: {go_quote(text)}")
    total_ms = 0
    groups = (match.group(i) for i in range(2, 15, 2))
    for group, unit_ms in zip(groups, _DURATION_UNITS_MS, strict=True):
        if group:
            total_ms += int(group) * unit_ms
    if total_ms * 1_000_000 >= 2**63:
        raise FuncError("duration out of range")
    return total_ms / 1000


def _split_host_port(hostport: str) -> tuple[str, str] | None:
    """``net.SplitHostPort``; ``None`` on error."""
    i = hostport.rfind(":")
    if i < 0:
        return None
    j = k = 0
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or end + 1 != i:
            return None
        host = hostport[1:end]
        j, k = 1, end + 1
    else:
        host = hostport[:i]
        if ":" in host:
            return None
    if "[" in hostport[j:] or "]" in hostport[k:]:
        return None
    return host, hostport[i + 1 :]


def strip_port(hostport: str) -> str:
    split = _split_host_port(hostport)
    return hostport if split is None else split[0]


def _is_ip(host: str) -> bool:
    if "%" in host:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def strip_domain(hostport: str) -> str:
    split = _split_host_port(hostport)
    host, port = split if split is not None else (hostport, "")
    if _is_ip(host):
        return hostport
    host = host.split(".")[0]
    if port:
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return host


def title(text: str) -> str:
    """``strings.Title``: upper-case the first letter of each word."""

    def separator(ch: str) -> bool:
        if ord(ch) <= 0x7F:
            return not (ch.isalnum() or ch == "_")
        if ch.isalpha() or ch.isdigit():
            return False
        return ch.isspace()

    out = []
    prev = " "
    for ch in text:
        if separator(prev):
            titled = ch.title()
            out.append(titled if len(titled) == 1 else ch)
        else:
            out.append(ch)
        prev = ch
    return "".join(out)


def _case(convert: Callable[[str], str]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        # Go maps rune by rune; a rune with no single-rune mapping stays as it is.
        return "".join(c if len(convert(c)) != 1 else convert(c) for c in text)

    return apply


def _sample(sample: object) -> QuerySample:
    if not isinstance(sample, QuerySample):
        raise FuncError(_NIL_POINTER)
    return sample


def first(result: object) -> QuerySample:
    if isinstance(result, list) and result:
        return _sample(result[0])
    raise FuncError("first() called on vector with no elements")


def label(name: str, sample: object) -> str:
    return str(_sample(sample).labels.get(name, ""))


def value(sample: object) -> float:
    return float(_sample(sample).value)


def strvalue(sample: object) -> str:
    return str(_sample(sample).labels.get("__value__", ""))


def args(*values: object) -> ArgsMap:
    return ArgsMap({f"arg{i}": v for i, v in enumerate(values)})


def re_replace_all(pattern: str, repl: str, text: str) -> str:
    try:
        regexp = must_compile(pattern)  # Prometheus panics; the template reports the panic
    except RegexpError as exc:
        raise FuncError(str(exc)) from None
    return regexp.replace_all_string(text, repl)


def match(pattern: str, text: str) -> bool:
    try:
        return compile_regexp(pattern).match_string(text)
    except RegexpError as exc:
        raise FuncError(str(exc)) from None


def sort_by_label(name: str, result: object) -> object:
    if isinstance(result, list):
        result.sort(key=lambda s: str(s.labels.get(name, "")) if isinstance(s, QuerySample) else "")
    return result


def prometheus_functions(
    query: Callable[[str], Sequence[QuerySample]] | None, external_url: str
) -> dict[str, Func]:
    """The function map of one expansion, bound to its query function and external URL."""

    def run_query(expr: str) -> QueryResult:
        if query is None:
            raise FuncError("no query function is configured for templates")
        try:
            samples = query(expr)
        except Exception as exc:  # the injected client may fail in any way
            raise FuncError(str(exc)) from exc
        return QueryResult(QuerySample(dict(s.labels), float(s.value)) for s in samples)

    def graph_link(expr: str) -> str:
        return f"/graph?g0.expr={query_escape(expr)}&g0.tab=0"

    def table_link(expr: str) -> str:
        return f"/graph?g0.expr={query_escape(expr)}&g0.tab=1"

    return {
        "query": Func(run_query, ("string",)),
        "first": Func(first, ("vector",)),
        "label": Func(label, ("string", "sample")),
        "value": Func(value, ("sample",)),
        "strvalue": Func(strvalue, ("sample",)),
        "args": Func(args, (), "any"),
        "reReplaceAll": Func(re_replace_all, ("string", "string", "string")),
        "safeHtml": Func(HTML, ("string",)),
        "match": Func(match, ("string", "string")),
        "title": Func(title, ("string",)),
        "toUpper": Func(_case(str.upper), ("string",)),
        "toLower": Func(_case(str.lower), ("string",)),
        "graphLink": Func(graph_link, ("string",)),
        "tableLink": Func(table_link, ("string",)),
        "sortByLabel": Func(sort_by_label, ("string", "vector")),
        "stripPort": Func(strip_port, ("string",)),
        "stripDomain": Func(strip_domain, ("string",)),
        "humanize": Func(humanize, ("any",)),
        "humanize1024": Func(humanize1024, ("any",)),
        "humanizeDuration": Func(humanize_duration, ("any",)),
        "humanizePercentage": Func(humanize_percentage, ("any",)),
        "humanizeTimestamp": Func(humanize_timestamp, ("any",)),
        "toTime": Func(to_time, ("any",)),
        "pathPrefix": Func(lambda: urlsplit(external_url).path),
        "externalURL": Func(lambda: external_url),
        "parseDuration": Func(parse_duration, ("string",)),
    }


FUNCTION_NAMES = frozenset(prometheus_functions(None, ""))
