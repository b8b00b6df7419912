"""Plotly figures of a ``WhyResult``: pure functions of its frames (no display side effects).

``gap_waterfall(terms)``, ``token_bars(tokens)``, ``attribution_bars(attribution)`` and
``competitors_bar(competitors)`` each take one frame of ``surfacelab.why.WhyResult`` and return a
``plotly.graph_objects.Figure``; ``why_figures(result)`` builds all four. Every number drawn is a
cell of the frame it came from.

>>> figs = why_figures(sl.why(lm, premise, options, gold=0))  # doctest: +SKIP
>>> figs["gap"].show()                                        # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .viz import _check_frame, _layout

#: Colour of each competitor group (gold warm, other options cool, shared and elsewhere grey).
GROUP_COLORS = {"gold": "#e8a317", "gold form": "#f6cf6b", "against": "#4c78a8", "against form": "#9ecae9",
                "other option": "#72b7b2", "other option form": "#b5dcd9", "shared": "#9d755d",
                "elsewhere": "#bab0ac"}
#: Colour of each attribution method.
METHOD_COLORS = {"remove": "#4c78a8", "replace": "#f58518", "grad_x_input": "#54a24b"}
METHOD_NAMES = {"remove": "occlusion: remove", "replace": "occlusion: replace", "grad_x_input": "gradient × input"}
GAP_TERMS = ("length", "prior per token", "premise evidence")


def _visible(token: str) -> str:
    return token.replace(" ", "\u00b7").replace("\n", "\u21b5")


def gap_waterfall(terms: pd.DataFrame, *, title: str = "Where the LM gap comes from") -> go.Figure:
    """Waterfall of the gap terms: length + prior per token + premise evidence = LM gap (gold − against).

    Args:
        terms: ``WhyResult.terms`` (rows of group ``gap``).
    """
    terms = _check_frame(terms, "terms", ["group", "term", "value", "sentence"])
    gap = terms[terms["group"] == "gap"].set_index("term")
    missing = [t for t in (*GAP_TERMS, "LM gap") if t not in gap.index]
    if missing:
        raise ValueError(f"terms: missing gap term(s) {missing}")
    names = [*GAP_TERMS, "LM gap"]
    values = [float(gap.loc[t, "value"]) for t in names]
    fig = go.Figure(go.Waterfall(
        x=names, y=values, measure=["relative"] * len(GAP_TERMS) + ["total"],
        text=[f"{v:+.2f}" for v in values], textposition="outside",
        customdata=[gap.loc[t, "sentence"] for t in names], hovertemplate="%{customdata}<extra></extra>",
        increasing=dict(marker=dict(color="#54a24b")), decreasing=dict(marker=dict(color="#e45756")),
        totals=dict(marker=dict(color="#4c78a8")), connector=dict(line=dict(color="#999", width=1))))
    fig.add_hline(y=0, line=dict(color="#666", width=1))
    fig.update_yaxes(title_text="nats (gold − against; > 0 helps the gold)")
    return fig.update_layout(**_layout(title, 360))


def token_bars(tokens: pd.DataFrame, *, title: str = "Tokens of the two options") -> go.Figure:
    """Both options' tokens side by side: log-prob under the premise and under the prior context.

    Args:
        tokens: ``WhyResult.tokens``.
    """
    tokens = _check_frame(tokens, "tokens", ["side", "option", "position", "token", "logprob", "prior_logprob",
                                             "evidence"])
    sides = [s for s in ("gold", "against") if (tokens["side"] == s).any()]
    fig = make_subplots(rows=1, cols=len(sides), shared_yaxes=True, horizontal_spacing=0.04,
                        subplot_titles=[f"{s}: {tokens[tokens['side'] == s]['option'].iloc[0]!r}" for s in sides])
    for c, side in enumerate(sides, 1):
        sub = tokens[tokens["side"] == side]
        x = [f"{p}:{_visible(t)}" for p, t in zip(sub["position"], sub["token"])]
        for col, name, color in (("logprob", "premise", "#4c78a8"), ("prior_logprob", "prior context", "#bab0ac")):
            fig.add_trace(go.Bar(x=x, y=sub[col], name=name, marker_color=color, showlegend=c == 1,
                                 legendgroup=name, customdata=np.stack([sub["evidence"]], axis=-1),
                                 hovertemplate="%{x}<br>log-prob %{y:.3f}<br>evidence %{customdata[0]:+.3f}"
                                               "<extra>" + name + "</extra>"), 1, c)
    fig.update_layout(barmode="group")
    fig.update_yaxes(title_text="log-prob (nats)", row=1, col=1)
    return fig.update_layout(**_layout(title, 360))


def attribution_bars(attribution: pd.DataFrame, *, unit: str = "word",
                     title: str = "Premise words: support for the gold") -> go.Figure:
    """Each premise unit's support for the gold over the other option, per method (−delta_lm).

    Args:
        attribution: ``WhyResult.attribution``.
        unit: "word" or "sentence".
    """
    attribution = _check_frame(attribution, "attribution", ["unit", "index", "text", "method", "delta_lm",
                                                            "lm_margin", "dcpmi_margin", "gold_wins_lm",
                                                            "gold_wins_dcpmi"])
    sub = attribution[attribution["unit"] == unit]
    fig = go.Figure()
    for method in [m for m in METHOD_NAMES if (sub["method"] == m).any()]:
        rows = sub[sub["method"] == method].sort_values("index")
        x = [f"{i}:{t}" for i, t in zip(rows["index"], rows["text"])]
        hover = [("" if method == "grad_x_input" else
                  f"<br>after: LM margin {lm:+.2f}, DC-PMI margin {pm:+.2f}<br>gold wins: LM {wl}, DC-PMI {wp}")
                 for lm, pm, wl, wp in zip(rows["lm_margin"], rows["dcpmi_margin"], rows["gold_wins_lm"],
                                           rows["gold_wins_dcpmi"])]
        fig.add_trace(go.Bar(x=x, y=-rows["delta_lm"], name=METHOD_NAMES[method], marker_color=METHOD_COLORS[method],
                             customdata=hover, hovertemplate="%{x}: %{y:+.3f} nats%{customdata}<extra>"
                                                             + METHOD_NAMES[method] + "</extra>"))
    fig.add_hline(y=0, line=dict(color="#666", width=1))
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.25))
    fig.update_yaxes(title_text="margin lost without it (nats)")
    return fig.update_layout(**_layout(title, 380))


def competitors_bar(competitors: pd.DataFrame, *, top: int = 20,
                    title: str = "Where the gold's mass went (next-token probability)") -> go.Figure:
    """The most likely next tokens where the options first differ, coloured by group.

    Args:
        competitors: ``WhyResult.competitors``.
        top: how many rows to draw (the most likely first).
    """
    competitors = _check_frame(competitors, "competitors", ["token", "prob", "group", "forms"])
    rows = competitors.head(top).iloc[::-1]
    fig = go.Figure()
    for group in [g for g in GROUP_COLORS if (rows["group"] == g).any()]:
        sub = rows[rows["group"] == group]
        fig.add_trace(go.Bar(x=sub["prob"], y=[f"{_visible(t)!r}" for t in sub["token"]], orientation="h",
                             name=group, marker_color=GROUP_COLORS[group],
                             customdata=[f[:300] for f in sub["forms"]],
                             hovertemplate="%{y}: P = %{x:.2%}<br>%{customdata}<extra>" + group + "</extra>"))
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text="P(next token)", tickformat=".0%")
    fig.update_yaxes(categoryorder="array", categoryarray=[f"{_visible(t)!r}" for t in rows["token"]])
    return fig.update_layout(**_layout(title, 120 + 22 * len(rows)))


def why_figures(result: Any) -> dict[str, go.Figure]:
    """All four figures of a ``WhyResult``: "gap", "tokens", "attribution", "competitors"."""
    return {"gap": gap_waterfall(result.terms), "tokens": token_bars(result.tokens),
            "attribution": attribution_bars(result.attribution), "competitors": competitors_bar(result.competitors)}
