"""Plotly figures built from result frames: pure functions, no display side effects, one module per analysis
(``scores``, ``paraphrase``, ``letters``, ``pll``, ``why``) on the shared ``base``; this package exports them all.

Every figure exists twice: ``<name>_spec(...)`` returns the plotly JSON (a plain ``dict`` with
``data`` and ``layout``, nothing validated, so a live view can redraw it in a few milliseconds with
``Plotly.react``), and ``<name>(...)`` returns the same figure as a ``plotly.graph_objects.Figure``
(for notebooks and export). Nothing here scores text; ``save(fig, path)`` writes PNG (kaleido, needs
a Chromium) or standalone HTML.

Text in figures is escaped for plotly: ``<``, ``>`` and ``&`` become entities and ``$`` becomes
``&#36;`` (two dollar signs anywhere in a plotly string turn it into LaTeX). Leading spaces of
options are drawn as ``␣``.

The ``*_reading`` functions say in one or two sentences what a figure shows, with numbers rounded so
that two different numbers never print the same.

>>> r = sl.score(lm, "The man took a bath in the", [" bathtub", " tub"], domain_premise=" the")  # doctest: +SKIP
>>> scorer_table(r.table, gold=0).show()                                                        # doctest: +SKIP
"""

from __future__ import annotations

from .base import (FONT, GOLD_FILL, LETTER_COLORS, LETTER_NAMES, METRIC_COLORS, PALETTE, PLAIN_FILL, WINNER_FILL,
                   axis_keys, base_layout, check_frame, check_gold, esc, figure, grid, option_label, panel_title,
                   plain, save, tick, wrap)
from .scores import (accuracy_ci, scorer_cells, scorer_table, token_heatmap)
from .paraphrase import (mass_reading, paraphrase_mass, paraphrase_mass_spec)
from .letters import (letter_priors, letter_priors_spec, letters_reading)
from .pll import (pll_options, pll_options_spec, pll_reading, pll_subwords, pll_subwords_spec, pll_totals)
from .why import (GAP_TERMS, GROUP_COLORS, METHOD_COLORS, METHOD_NAMES, attribution_bars, attribution_bars_spec,
                  competitors_bar, competitors_bar_spec, gap_waterfall, gap_waterfall_spec, token_bars,
                  token_bars_spec, why_figures)

__all__ = [
    "FONT",
    "GOLD_FILL",
    "LETTER_COLORS",
    "LETTER_NAMES",
    "METRIC_COLORS",
    "PALETTE",
    "PLAIN_FILL",
    "WINNER_FILL",
    "axis_keys",
    "base_layout",
    "check_frame",
    "check_gold",
    "esc",
    "figure",
    "grid",
    "option_label",
    "panel_title",
    "plain",
    "save",
    "tick",
    "wrap",
    "accuracy_ci",
    "scorer_cells",
    "scorer_table",
    "token_heatmap",
    "mass_reading",
    "paraphrase_mass",
    "paraphrase_mass_spec",
    "letter_priors",
    "letter_priors_spec",
    "letters_reading",
    "pll_options",
    "pll_options_spec",
    "pll_reading",
    "pll_subwords",
    "pll_subwords_spec",
    "pll_totals",
    "GAP_TERMS",
    "GROUP_COLORS",
    "METHOD_COLORS",
    "METHOD_NAMES",
    "attribution_bars",
    "attribution_bars_spec",
    "competitors_bar",
    "competitors_bar_spec",
    "gap_waterfall",
    "gap_waterfall_spec",
    "token_bars",
    "token_bars_spec",
    "why_figures",
]
