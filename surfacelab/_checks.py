"""Argument checks shared by the whole package: one rule for "an integer" and "a number" (bools are neither).

>>> is_int(3), is_int(True), is_int(3.0)
(True, False, False)
>>> check_int("limit", 0, 1)
Traceback (most recent call last):
ValueError: limit: expected an integer >= 1, got 0
"""

from __future__ import annotations

from typing import Any

import numpy as np


def is_int(value: Any) -> bool:
    """True for a Python or numpy integer that is not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """True for a Python or numpy integer or float that is not a bool."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def check_int(name: str, value: Any, minimum: int, *, allow_none: bool = False) -> int | None:
    """``value`` as an ``int`` (None passes when ``allow_none``), or a ``ValueError`` naming ``name``.

    Args:
        name: the argument name the message blames.
        value: what was passed.
        minimum: the smallest value allowed.
        allow_none: accept None (returned as None).
    """
    if value is None and allow_none:
        return None
    if not is_int(value) or value < minimum:
        raise ValueError(f"{name}: expected an integer >= {minimum}{' or None' if allow_none else ''}, got {value!r}")
    return int(value)
