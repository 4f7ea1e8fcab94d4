"""The Go types of the engine's Python values (what ``%T`` and Go's error texts name).

Python ``str``, ``bool``, ``int``, ``float``, ``complex`` and ``None`` stand for Go ``string``,
``bool``, ``int``, ``float64``, ``complex128`` and ``nil``; a ``dict`` for a
``map[string]string`` and a ``list`` for a ``[]interface {}``. A value of any other Go type
is an instance of :class:`GoValue`, which names its type and says how ``fmt`` prints it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar


class GoValue(ABC):
    """A value of a Go type with no built-in Python stand-in."""

    __slots__ = ()

    @abstractmethod
    def go_type(self) -> str:
        """The type's name as ``%T`` prints it (``*time.Time``, ``template.HTML``)."""


class Nil(GoValue):
    """A value ``fmt`` prints as ``<nil>``, as it does a nil interface."""

    __slots__ = ()

    def go_type(self) -> str:
        return "<nil>"


class Stringer(GoValue):
    """A ``fmt.Stringer``: ``%v`` and ``%s`` print what ``go_string`` returns."""

    __slots__ = ()

    @abstractmethod
    def go_string(self) -> str:
        """The ``String()`` method."""


class Struct(GoValue):
    """A struct, printed ``{field field}``; ``&{field field}`` when ``pointer`` (a pointer
    to the struct, which ``fmt`` follows)."""

    __slots__ = ()
    pointer: ClassVar[bool] = False

    @abstractmethod
    def go_fields(self) -> tuple[object, ...]:
        """The field values in declaration order."""


# The Python stand-ins: (type, Go type name, text/template's kind or None), in the order
# they are tried (a bool is also an int).
_STAND_INS: tuple[tuple[type, str, str | None], ...] = (
    (bool, "bool", "bool"),
    (int, "int", "int"),
    (float, "float64", "float"),
    (complex, "complex128", "complex"),
    (str, "string", "string"),
    (dict, "map[string]string", None),
    (list, "[]interface {}", None),
)


def type_name(value: object) -> str:
    """The Go type name of ``value``, as ``%T`` and Go's error messages write it."""
    if value is None:
        return "<nil>"
    if isinstance(value, GoValue):
        return value.go_type()
    for python_type, go_name, _ in _STAND_INS:
        if isinstance(value, python_type):
            return go_name
    return type(value).__name__


def basic_kind(value: object) -> str | None:
    """The kind ``text/template`` compares ``value`` as (``basicKind``), or None."""
    for python_type, _, kind in _STAND_INS:
        if isinstance(value, python_type):
            return kind
    return None


def is_nil(value: object) -> bool:
    """Whether ``fmt`` prints ``value`` as ``<nil>``."""
    return value is None or isinstance(value, Nil)
