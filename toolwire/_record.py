"""Small value classes without :mod:`dataclasses`' class-creation cost.

``@dataclass`` writes each class's methods as source text and compiles it when the
class is created: about 0.3–0.8 ms a class on a slow machine, paid by every process
that imports the module. A worker process imports a dozen such classes before it can
serve (issue 13's start-up target). A :class:`Record` subclass names its fields in
``__match_args__`` (also ``__slots__``) and writes its own ``__init__``; it gets the
``repr``, equality and hashing rules a dataclass would give it (``eq=True``; a
:class:`FrozenRecord` is immutable and hashable like ``frozen=True``).
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from typing import Any

__all__ = ["FrozenRecord", "Record"]


class Record:
    """A mutable value: ``repr`` and ``==`` over the fields in ``__match_args__``;
    unhashable, as a dataclass with ``eq=True`` is."""

    __slots__ = ()
    __match_args__: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__match_args__)

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__match_args__)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, Record)
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Copy and pickle by calling the class with the field values."""
        return (type(self), self._values())


class FrozenRecord(Record):
    """An immutable :class:`Record`: assigning a field raises
    :class:`dataclasses.FrozenInstanceError`; hashable over its fields. ``__init__``
    sets fields with ``object.__setattr__``."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(self._values())
