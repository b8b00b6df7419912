"""The one Registry behind scorers, tasks, letter templates and methods, PLL metrics and model presets."""

from __future__ import annotations

import pytest

from surfacelab.registry import Derived, Registry, UnknownName


def test_register_refuses_a_taken_name_unless_overwrite():
    reg = Registry("widget")
    reg.register("a", 1)
    with pytest.raises(ValueError, match="widget: 'a' is already registered"):
        reg.register("a", 2)
    assert reg["a"] == 1
    reg.register("a", 2, overwrite=True)
    assert reg["a"] == 2 and list(reg) == ["a"]


@pytest.mark.parametrize("bad", ["", " a", None, 3])
def test_register_refuses_bad_names(bad):
    with pytest.raises(ValueError, match="widget name must be a non-empty string"):
        Registry("widget").register(bad, 1)


def test_unknown_names_get_close_matches_and_are_key_and_value_errors():
    reg = Registry("metric", argument="metrics")
    for name in ("original", "word_l2r", "whole_word"):
        reg.register(name, name.upper())
    with pytest.raises(UnknownName) as err:
        reg["whole-word"]
    assert isinstance(err.value, KeyError) and isinstance(err.value, ValueError)
    assert str(err.value) == ("metrics: unknown metric 'whole-word' (did you mean 'whole_word'?); "
                              "known: original, word_l2r, whole_word")
    assert "(did you mean" not in str(reg.unknown("zzz"))
    assert reg.get("nope", 0) == 0 and "nope" not in reg and 3 not in reg


def test_order_unregister_and_live_views():
    reg = Registry("thing")
    for k, v in (("b", 2), ("a", 1)):
        reg.register(k, v)
    doubled = Derived(reg, lambda v: f"x{v}", lambda v: 2 * v)
    assert list(reg.items()) == [("b", 2), ("a", 1)] and dict(doubled) == {"x2": 4, "x1": 2}
    reg.register("c", 3)
    assert doubled["x3"] == 6 and len(doubled) == 3
    assert reg.unregister("b") == 2 and list(reg) == ["a", "c"]
    with pytest.raises(KeyError):
        reg.unregister("b")
