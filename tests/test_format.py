"""_format: the shared number formatting of explanations and views."""

from __future__ import annotations

import math

import numpy as np
import pytest

from surfacelab._format import change, gap, percent


def test_percent_keeps_probabilities_a_hundredth_of_a_nat_apart_distinct():
    assert (percent(0.00047), percent(0.00052)) == ("0.0470%", "0.0520%")  # both "0.05%" with 2 decimals
    for p in np.geomspace(1e-9, 0.98, 2000):
        q = p * math.exp(0.0101)  # just over the 0.01 nats that printed nats resolve
        assert percent(p) != percent(q), (p, q)


def test_percent_reads_as_a_probability():
    assert [percent(p) for p in (1.0, 0.3399, 0.0162, 0.0, float("nan"))] == ["100%", "34.0%", "1.62%", "0%", "n/a"]
    assert percent(0.99996) == "100%"  # rounding up to 100 keeps three significant digits, not "100.0%"
    assert percent(9.4e-07) == "9.40e-05%"  # below 0.001%: scientific, still a percentage
    assert percent(0.0162, digits=2) == "1.6%"
    with pytest.raises(ValueError, match="^p:"):
        percent(-0.1)
    with pytest.raises(ValueError, match="^digits:"):
        percent(0.5, digits=0)


def test_change_puts_the_sign_into_the_verb():
    assert change(-2.85, "'a pan'") == "lowers 'a pan' by 2.85 nats"
    assert change(2.85, "'a pan'") == "raises 'a pan' by 2.85 nats"
    assert change(-0.0004, "it") == "lowers it by 0.0004 nats"  # a non-zero change never reads as 0
    assert change(0.0, "it") == change(-0.0, "it") == "leaves it unchanged"
    assert change(float("nan"), "it") == "changes it by n/a"
    assert change(1.0, "it", unit="nats/token") == "raises it by 1.00 nats/token"


def test_gap_of_a_non_finite_number_is_not_available():
    assert gap(float("inf")) == gap(float("nan")) == "n/a"
