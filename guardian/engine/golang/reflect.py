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


def type_name(value: object) -> str:
    """The Go type name of ``value``, as ``%T`` and Go's error messages write it."""
    if value is None:
        return "<nil>"
    if isinstance(value, GoValue):
        return value.go_type()
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, complex):
        return "complex128"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]string"
    if isinstance(value, list):
        return "[]interface {}"
    return type(value).__name__


def is_nil(value: object) -> bool:
    """Whether ``fmt`` prints ``value`` as ``<nil>``."""
    return value is None or isinstance(value, Nil)
