"""How the executor calls a template function: the Go parameter kinds it declares.

Kinds: ``string``; ``any`` (``interface {}``); ``value`` (``reflect.Value``, builtins only);
``sample`` (``*template.sample``); ``vector`` (``template.queryResult``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

GO_KIND_NAMES = {
    "string": "string",
    "any": "interface {}",
    "value": "reflect.Value",
    "sample": "*template.sample",
    "vector": "template.queryResult",
}


@dataclass(frozen=True)
class Func:
    """A template function: the Python callable and its Go signature."""

    fn: Callable[..., object]
    params: tuple[str, ...] = ()
    variadic: str | None = None  # kind of the trailing ``...`` parameter
