"""Number and text formatting for the words people read: no two different numbers print the same.

Plain-language explanations ("49% against 49%", "beats by 0.00 nats") must not round two different
numbers to the same text or a non-zero gap to zero. ``distinct`` picks the fewest decimals that keep
different values apart; ``gap`` prints a difference with enough decimals to show that it is not 0;
``percent`` prints a probability with significant digits, so probabilities a visible number of nats
apart never print alike; ``change`` puts a signed change into words whose verb carries the sign;
``visible`` makes leading whitespace visible (the one marker used in every view: ``␣``); ``printable`` writes
the characters a terminal would act on as escapes, for text from a file shown on a terminal.

>>> distinct([0.491, 0.494], percent=True)
['49.1%', '49.4%']
>>> gap(0.0031)
'0.003'
>>> percent(0.00047), percent(0.00052)
('0.0470%', '0.0520%')
>>> visible(" bathtub")
'␣bathtub'
>>> print(printable("model \\x1b[2J\\u202eevil\\u2028"))
model \\x1b[2J\\u202eevil\\u2028
"""

from __future__ import annotations

import math
import re
from typing import Iterable

from ._checks import check_int

MAX_DIGITS = 6
#: Significant digits of a printed probability: two probabilities more than 0.01 nats apart (a ratio over 1.01, the
#: precision nats are printed with) never print alike, however small they are.
PROB_DIGITS = 3
SPACE_MARK = "\u2423"  # ␣
#: What a terminal acts on or cannot print: C0 and C1 controls (ESC starts a CSI / OSC sequence, U+009B is a CSI on
#: its own), DEL, the line and paragraph separators, the bidirectional overrides and isolates (text shown in another
#: order than it is stored) and lone surrogates (not encodable, so printing them fails).
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                          "\ud800-\udfff]")
_WHITESPACE_MARKS = {" ": SPACE_MARK, "\t": "\u21e5", "\n": "\u21b5", "\r": "\u21b5", "\u00a0": "\u237d"}


def _fmt(x: float, digits: int, percent: bool) -> str:
    if not math.isfinite(x):
        return "n/a"
    return f"{x:.{digits}%}" if percent else f"{x:.{digits}f}"


def distinct(values: Iterable[float], *, percent: bool = False, digits: int | None = None) -> list[str]:
    """Format ``values`` with the fewest decimals (at least ``digits``) that print different values differently.

    Args:
        values: the numbers shown together (e.g. two shares compared in one sentence).
        percent: format as percentages ("49.1%").
        digits: minimum decimals (default 0 for percentages, 2 otherwise).

    Returns:
        One string per value; values equal as floats print the same, different ones differently
        (up to ``MAX_DIGITS`` decimals).
    """
    vals = [float(v) for v in values]
    d = (0 if percent else 2) if digits is None else digits
    while True:
        out = [_fmt(v, d, percent) for v in vals]
        clash = any(out[i] == out[j] and vals[i] != vals[j]
                    for i in range(len(vals)) for j in range(i + 1, len(vals)))
        if not clash or d >= MAX_DIGITS:
            return out
        d += 1


def gap(x: float, *, digits: int = 2) -> str:
    """A non-negative difference with enough decimals that a non-zero gap never prints as 0.

    >>> gap(1.234), gap(0.0004), gap(0.0), gap(float("inf"))
    ('1.23', '0.0004', '0.00', 'n/a')
    """
    x = float(x)
    if not math.isfinite(x):
        return _fmt(x, digits, False)
    d = digits
    while d < MAX_DIGITS and x != 0 and float(_fmt(abs(x), d, False)) == 0:
        d += 1
    if x != 0 and float(_fmt(abs(x), d, False)) == 0:
        return f"< {10 ** -MAX_DIGITS:.{MAX_DIGITS}f}"
    return _fmt(x, d, False)


def signed(x: float, *, digits: int = 2) -> str:
    """A signed number that never prints as "-0.00" (a zero has no sign) and, when not zero, never as zero.

    >>> signed(1.234), signed(-0.0), signed(-0.0004), signed(float("nan"))
    ('+1.23', '0.00', '-0.0004', 'n/a')
    """
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return _fmt(abs(x), digits, False)
    return ("+" if x > 0 else "-") + gap(abs(x), digits=digits)


def percent(p: float, *, digits: int = PROB_DIGITS) -> str:
    """A probability as a percentage with ``digits`` significant digits (scientific below 0.001%).

    Fixed decimals print 0.00047 and 0.00052 both as "0.05%" (0.10 nats apart); significant digits keep
    them apart at any size (see ``PROB_DIGITS``).

    >>> percent(0.3399), percent(0.0162), percent(2.9e-05), percent(9.4e-07), percent(0.99996), percent(0.0)
    ('34.0%', '1.62%', '0.00290%', '9.40e-05%', '100%', '0%')
    """
    check_int("digits", digits, 1)
    p = float(p)
    if not math.isfinite(p):
        return "n/a"
    if p < 0:
        raise ValueError(f"p: expected a probability >= 0, got {p!r}")
    if p == 0:
        return "0%"
    rounded = f"{p * 100:.{digits - 1}e}"  # rounded first, so 99.996 is read as 100 (three digits before the point)
    exponent = int(rounded.split("e")[1])
    if exponent < -3:
        return f"{rounded}%"
    return f"{float(rounded):.{max(digits - 1 - exponent, 0)}f}%"


def change(x: float, what: str, *, unit: str = "nats") -> str:
    """A signed change in words whose verb carries the sign, the size after "by" unsigned (as ``gap``): never
    "raises X by -2.85".

    >>> change(-2.85, "'a pan'"), change(0.0004, "it", unit="nats/token"), change(0.0, "it")
    ("lowers 'a pan' by 2.85 nats", 'raises it by 0.0004 nats/token', 'leaves it unchanged')
    """
    x = float(x)
    if x == 0:
        return f"leaves {what} unchanged"
    if math.isnan(x):
        return f"changes {what} by n/a"
    return f"{'raises' if x > 0 else 'lowers'} {what} by {gap(abs(x))} {unit}"


def visible(text: str) -> str:
    """``text`` with its leading and trailing whitespace drawn as marks (␣ for a space, ↵ newline, ⇥ tab)."""
    core = text.strip()
    if not core:
        return "".join(_WHITESPACE_MARKS.get(c, c) for c in text)
    lead = text[:len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()):]
    return ("".join(_WHITESPACE_MARKS.get(c, c) for c in lead) + core
            + "".join(_WHITESPACE_MARKS.get(c, c) for c in trail))


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on (controls, ESC sequences, bidi overrides, line
    separators) or cannot print (lone surrogates) written as its Python escape (``\\x1b``, ``\\u2028``); the rest,
    other languages and emoji included, as it is."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
