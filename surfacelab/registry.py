"""One small registry for every kind of named thing a user can add: scorers, tasks, letter templates,
letter methods, PLL metrics and model presets.

A registry is a read-only mapping from name to object, in registration order. ``register`` refuses a
name that is taken unless ``overwrite=True``; looking up an unknown name raises :class:`UnknownName`
(both a ``KeyError`` and a ``ValueError``) whose message names the argument and the closest known names.

>>> colours = Registry("colour")
>>> colours.register("red", "#f00")
'#f00'
>>> colours.register("red", "#e00")
Traceback (most recent call last):
ValueError: colour: 'red' is already registered; pass overwrite=True to replace it
>>> colours["rde"]
Traceback (most recent call last):
surfacelab.registry.UnknownName: colour: unknown colour 'rde' (did you mean 'red'?); known: red
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class UnknownName(KeyError, ValueError):
    """An unknown name: a ``KeyError`` for mapping code, a ``ValueError`` naming the argument for users."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Mapping[str, T], Generic[T]):
    """Named objects of one kind, in registration order.

    Args:
        kind: what the objects are ("scorer", "task", ...), used in messages.
        argument: the argument name that messages blame (default: ``kind``).
        note: a few words said of an object after its name in the list of known names ("not shipped"), or "".
    """

    def __init__(self, kind: str, argument: str | None = None, note: Callable[[T], str] | None = None) -> None:
        self.kind = kind
        self.argument = argument or kind
        self.note = note
        self._items: dict[str, T] = {}

    def register(self, name: str, obj: T, *, overwrite: bool = False) -> T:
        """Add ``obj`` under ``name``; a taken name raises ``ValueError`` unless ``overwrite``. Returns ``obj``."""
        if not isinstance(name, str) or not name or name != name.strip():
            raise ValueError(f"{self.argument}: a {self.kind} name must be a non-empty string without surrounding "
                             f"whitespace, got {name!r}")
        if name in self._items and not overwrite:
            raise ValueError(f"{self.argument}: {name!r} is already registered; pass overwrite=True to replace it")
        self._items[name] = obj
        return obj

    def unregister(self, name: str) -> T:
        """Remove and return the object registered under ``name`` (tests and notebooks clean up with it)."""
        obj = self[name]
        del self._items[name]
        return obj

    def close_matches(self, name: object, n: int = 3) -> list[str]:
        """The registered names closest to ``name``, best first: those it begins (``arc`` -> ``arc-challenge``),
        then difflib's.

        >>> tasks = Registry("task"); _ = [tasks.register(t, t) for t in ("arc-challenge", "arc-easy", "copa")]
        >>> tasks.close_matches("arc"), tasks.close_matches("cop")
        (['arc-challenge', 'arc-easy'], ['copa'])
        """
        text = str(name)
        starts = [k for k in self._items if len(text) >= 2 and k.lower().startswith(text.lower()) and k != text]
        similar = difflib.get_close_matches(text, list(self._items), n=n, cutoff=0.6)
        return list(dict.fromkeys(starts + similar))[:n]

    def unknown(self, name: object) -> UnknownName:
        """The error for an unknown ``name``: the argument, the closest names and every known name (with its
        ``note``)."""
        close = self.close_matches(name)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        known = ", ".join(f"{k} ({self.note(v)})" if self.note and self.note(v) else k for k, v in self._items.items())
        return UnknownName(f"{self.argument}: unknown {self.kind} {name!r}{hint}; known: {known}")

    def __getitem__(self, name: str) -> T:
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise self.unknown(name) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._items)})"


class Derived(Mapping[str, object]):
    """A live read-only mapping derived from a registry: ``key(obj) -> value(obj)`` for every object, in
    registration order (so a figure that reads it sees objects registered after it was imported)."""

    def __init__(self, registry: Registry, key, value) -> None:
        self._registry, self._key, self._value = registry, key, value

    def _pairs(self) -> dict:
        return {self._key(o): self._value(o) for o in self._registry.values()}

    def __getitem__(self, k: str) -> object:
        return self._pairs()[k]

    def __iter__(self) -> Iterator[str]:
        return iter(self._pairs())

    def __len__(self) -> int:
        return len(self._registry)

    def __repr__(self) -> str:
        return repr(self._pairs())
