"""Plotly figures of a ``WhyResult``: pure functions of its frames (no display side effects).

As in ``surfacelab.viz``, every figure exists twice: ``<name>_spec(frame)`` returns the plotly JSON (a
plain dict, for ``Plotly.react`` in the Workbench's Why view) and ``<name>(frame)`` the same figure as a
``plotly.graph_objects.Figure``. ``gap_waterfall(terms)``, ``token_bars(tokens)``,
``attribution_bars(attribution)`` and ``competitors_bar(competitors)`` each take one frame of
``surfacelab.why.WhyResult``; ``why_figures(result)`` builds all four. Every number drawn is a cell of
the frame it came from.

>>> figs = why_figures(sl.why(lm, premise, options, gold=0))  # doctest: +SKIP
>>> figs["gap"].show()                                        # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

from .._format import signed
from .base import check_frame, esc, figure, grid, base_layout, option_label, plain

#: Colour of each competitor group (gold warm, other options cool, shared and elsewhere grey).
GROUP_COLORS = {"gold": "#e8a317", "gold form": "#f6cf6b", "against": "#4c78a8", "against form": "#9ecae9",
                "other option": "#72b7b2", "other option form": "#b5dcd9", "shared": "#9d755d",
                "elsewhere": "#bab0ac"}
#: Colour of each attribution method.
METHOD_COLORS = {"remove": "#4c78a8", "replace": "#f58518", "grad_x_input": "#54a24b"}
METHOD_NAMES = {"remove": "occlusion: remove", "replace": "occlusion: replace", "grad_x_input": "gradient × input"}
GAP_TERMS = ("length", "prior per token", "premise evidence")
_ZERO = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": 0, "y1": 0, "line": {"color": "#666", "width": 1}}


def gap_waterfall_spec(terms: pd.DataFrame, *, title: str = "Where the LM gap comes from") -> dict:
    """Plotly JSON of ``gap_waterfall`` (see there)."""
    terms = check_frame(terms, "terms", ["group", "term", "value", "sentence"])
    gap = terms[terms["group"] == "gap"].set_index("term")
    missing = [t for t in (*GAP_TERMS, "LM gap") if t not in gap.index]
    if missing:
        raise ValueError(f"terms: missing gap term(s) {missing}")
    names = [*GAP_TERMS, "LM gap"]
    values = [float(gap.loc[t, "value"]) for t in names]
    data = [{"type": "waterfall", "x": names, "y": values, "measure": ["relative"] * len(GAP_TERMS) + ["total"],
             "text": [signed(v) for v in values], "textposition": "outside",
             "customdata": [esc(gap.loc[t, "sentence"]) for t in names],
             "hovertemplate": "%{customdata}<extra></extra>",
             "increasing": {"marker": {"color": "#54a24b"}}, "decreasing": {"marker": {"color": "#e45756"}},
             "totals": {"marker": {"color": "#4c78a8"}}, "connector": {"line": {"color": "#999", "width": 1}}}]
    layout = base_layout(esc(title), 330, shapes=[_ZERO], showlegend=False,
                     yaxis={"title": {"text": "nats (gold − other; > 0 helps the gold)"}})
    return {"data": data, "layout": layout}


def gap_waterfall(terms: pd.DataFrame, *, title: str = "Where the LM gap comes from") -> go.Figure:
    """Waterfall of the gap terms: length + prior per token + premise evidence = LM gap (gold − against).

    Args:
        terms: ``WhyResult.terms`` (rows of group ``gap``).
    """
    return figure(gap_waterfall_spec(terms, title=title))


def token_bars_spec(tokens: pd.DataFrame, *, title: str = "Tokens of the two options") -> dict:
    """Plotly JSON of ``token_bars`` (see there)."""
    tokens = check_frame(tokens, "tokens", ["side", "option", "position", "token", "logprob", "prior_logprob",
                                             "evidence"])
    sides = [s for s in ("gold", "against") if (tokens["side"] == s).any()]
    domains = grid(len(sides), len(sides), hgap=0.06, top=0.9)
    data, layout = [], base_layout(esc(title), 360, barmode="group", annotations=[])
    for k, side in enumerate(sides):
        sub = tokens[tokens["side"] == side]
        ax = "" if k == 0 else str(k + 1)
        x = [f"{p}:{option_label(t)}" for p, t in zip(sub["position"], sub["token"])]
        for col, name, color in (("logprob", "premise", "#4c78a8"), ("prior_logprob", "prior context", "#bab0ac")):
            data.append({"type": "bar", "x": x, "y": plain(sub[col]), "name": name, "marker": {"color": color},
                         "showlegend": k == 0, "legendgroup": name, "xaxis": f"x{ax}", "yaxis": f"y{ax}",
                         "customdata": plain(sub["evidence"]),
                         "hovertemplate": "%{x}<br>log-prob %{y:.3f}<br>evidence %{customdata:+.3f}<extra>"
                                          + name + "</extra>"})
        layout[f"xaxis{ax}"] = {"domain": domains[k]["x"], "anchor": f"y{ax}"}
        layout[f"yaxis{ax}"] = {"domain": domains[k]["y"], "anchor": f"x{ax}",
                                **({"title": {"text": "log-prob (nats)"}} if k == 0 else {"matches": "y"})}
        label = option_label(sub["option"].iloc[0], limit=30)
        layout["annotations"].append({"text": f"{side}: {label}", "showarrow": False,
                                      "xref": "paper", "yref": "paper", "x": sum(domains[k]["x"]) / 2, "y": 0.97,
                                      "xanchor": "center"})
    return {"data": data, "layout": layout}


def token_bars(tokens: pd.DataFrame, *, title: str = "Tokens of the two options") -> go.Figure:
    """Both options' tokens side by side: log-prob under the premise and under the prior context.

    Args:
        tokens: ``WhyResult.tokens``.
    """
    return figure(token_bars_spec(tokens, title=title))


def attribution_bars_spec(attribution: pd.DataFrame, *, unit: str = "word",
                          title: str = "Premise words: support for the gold") -> dict:
    """Plotly JSON of ``attribution_bars`` (see there)."""
    attribution = check_frame(attribution, "attribution", ["unit", "index", "text", "method", "delta_lm",
                                                            "lm_margin", "dcpmi_margin", "gold_wins_lm",
                                                            "gold_wins_dcpmi"])
    sub = attribution[attribution["unit"] == unit]
    data = []
    for method in [m for m in METHOD_NAMES if (sub["method"] == m).any()]:
        rows = sub[sub["method"] == method].sort_values("index")
        x = [f"{i}:{esc(t)}" for i, t in zip(rows["index"], rows["text"])]
        hover = [("" if method == "grad_x_input" else
                  f"<br>after: LM margin {lm:+.2f}, DC-PMI margin {pm:+.2f}<br>gold wins: LM {wl}, DC-PMI {wp}")
                 for lm, pm, wl, wp in zip(rows["lm_margin"], rows["dcpmi_margin"], rows["gold_wins_lm"],
                                           rows["gold_wins_dcpmi"])]
        data.append({"type": "bar", "x": x, "y": plain(-rows["delta_lm"]), "name": METHOD_NAMES[method],
                     "marker": {"color": METHOD_COLORS[method]}, "customdata": hover,
                     "hovertemplate": "%{x}: %{y:+.3f} nats%{customdata}<extra>" + METHOD_NAMES[method] + "</extra>"})
    layout = base_layout(esc(title), 380, shapes=[_ZERO], barmode="group", legend={"orientation": "h", "y": -0.25},
                     yaxis={"title": {"text": "margin lost without it (nats)"}})
    return {"data": data, "layout": layout}


def attribution_bars(attribution: pd.DataFrame, *, unit: str = "word",
                     title: str = "Premise words: support for the gold") -> go.Figure:
    """Each premise unit's support for the gold over the other option, per method (−delta_lm).

    Args:
        attribution: ``WhyResult.attribution``.
        unit: "word" or "sentence".
    """
    return figure(attribution_bars_spec(attribution, unit=unit, title=title))


def competitors_bar_spec(competitors: pd.DataFrame, *, top: int = 20,
                         title: str = "Where the gold's mass went (next-token probability)") -> dict:
    """Plotly JSON of ``competitors_bar`` (see there)."""
    competitors = check_frame(competitors, "competitors", ["token", "prob", "group", "forms"])
    rows = competitors.head(top).iloc[::-1]
    # unique, most likely on top
    labels = [f"{k}. {option_label(t)}" for k, t in zip(range(len(rows), 0, -1), rows["token"])]
    data = []
    for group in [g for g in GROUP_COLORS if (rows["group"] == g).any()]:
        pick = (rows["group"] == group).to_numpy()
        sub = rows[pick]
        data.append({"type": "bar", "orientation": "h", "x": plain(sub["prob"]),
                     "y": [lab for lab, p in zip(labels, pick) if p], "name": group,
                     "marker": {"color": GROUP_COLORS[group]}, "customdata": [esc(f[:300]) for f in sub["forms"]],
                     "hovertemplate": "%{y}: P = %{x:.2%}<br>%{customdata}<extra>" + group + "</extra>"})
    layout = base_layout(esc(title), 120 + 22 * len(rows), barmode="overlay",
                     xaxis={"title": {"text": "P(next token)"}, "tickformat": ".0%"},
                     yaxis={"categoryorder": "array", "categoryarray": labels, "automargin": True},
                     legend={"orientation": "h", "y": -0.2})
    return {"data": data, "layout": layout}


def competitors_bar(competitors: pd.DataFrame, *, top: int = 20,
                    title: str = "Where the gold's mass went (next-token probability)") -> go.Figure:
    """The most likely next tokens where the options first differ, coloured by group.

    Args:
        competitors: ``WhyResult.competitors``.
        top: how many rows to draw (the most likely first).
    """
    return figure(competitors_bar_spec(competitors, top=top, title=title))


def why_figures(result: Any) -> dict[str, go.Figure]:
    """All four figures of a ``WhyResult``: "gap", "tokens", "attribution", "competitors"."""
    return {"gap": gap_waterfall(result.terms), "tokens": token_bars(result.tokens),
            "attribution": attribution_bars(result.attribution), "competitors": competitors_bar(result.competitors)}
