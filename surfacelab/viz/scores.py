"""Figures of scores: the scorer table, the per-token heatmap, accuracy with confidence intervals."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .._checks import is_number
from .._format import visible
from ..scorers import SCORER_LABELS, SCORER_RANKS, TASK_TEXT_COLUMNS
from .base import (GOLD_FILL, PLAIN_FILL, WINNER_FILL, check_frame, check_gold, esc, figure, base_layout,
                  option_label, panel_title, plain)


def scorer_cells(table: pd.DataFrame, gold: int | None = None) -> tuple[list[str], list[list[str]], list[np.ndarray]]:
    """What a scorer table shows, for any renderer: the scorer columns that have a value, each
    column's cells (3 decimals, "–" where not finite) and its winner mask (``rank_<scorer>`` == 1)."""
    # a table made before the scorers of a task's texts (channel, mcf, choices) existed has none of their columns
    needed = [c for c in SCORER_LABELS if c not in TASK_TEXT_COLUMNS or c in table]
    table = check_frame(table, "table", ["option", *needed, *(SCORER_RANKS[c] for c in needed)])
    check_gold(gold, len(table))
    cols = [c for c in needed if table[c].notna().any()]
    cells = [[f"{x:.3f}" if np.isfinite(x) else "–" for x in table[c].to_numpy(dtype=float)] for c in cols]
    won = [(table[SCORER_RANKS[c]] == 1).to_numpy() for c in cols]
    return cols, cells, won


def scorer_table(table: pd.DataFrame, *, gold: int | None = None, title: str = "Scores per scorer") -> go.Figure:
    """The scorer table: one row per option, one column per scorer, the winner of each scorer highlighted.

    Args:
        table: ``MCResult.table`` (the winner of a scorer is the row whose ``rank_<scorer>`` is 1).
        gold: index of the gold option (its name gets a ★ and its row a light fill), or None.

    Returns:
        A figure with one ``go.Table``; cell fills mark the best option per scorer column.
    """
    cols, cells, won = scorer_cells(table, gold)
    # non-breaking spaces: plotly wraps table text at spaces and can lose it in narrow or hidden cells
    names = [(("★ " if i == gold else "") + option_label(o)).replace(" ", "\u00a0")
             for i, o in enumerate(table["option"])]
    # as the workbench's table draws it: the gold option's name filled, each winner's number bold on green, the
    # numbers right-aligned
    values = [names] + [[f"<b>{v}</b>" if win else v for v, win in zip(col_cells, col_won)]
                        for col_cells, col_won in zip(cells, won)]
    fills = [[GOLD_FILL if i == gold else PLAIN_FILL for i in range(len(table))]]
    fills += [[WINNER_FILL if win else PLAIN_FILL for win in col_won] for col_won in won]
    align = ["left"] + ["right"] * len(cols)
    spec = {"data": [{"type": "table", "columnwidth": [2.2] + [1] * len(cols),
                      "header": {"values": ["option"] + [SCORER_LABELS[c].replace(" ", "\u00a0") for c in cols],
                                 "align": align, "fill": {"color": "rgba(128,128,128,0.15)"},
                                 "font": {"size": 12}},
                      "cells": {"values": values, "fill": {"color": fills}, "align": align, "height": 26}}],
            "layout": base_layout(esc(title), 80 + 28 * len(table))}
    return figure(spec)


def token_heatmap(tokens: pd.DataFrame, *, title: str = "Per-token log-prob") -> go.Figure:
    """Heatmap of per-token log-probs per option and condition, and of the per-token DC-PMI contribution.

    Args:
        tokens: ``surfacelab.alternatives.token_view`` output (columns option, condition, position,
            token, token_id, logprob, rank, entropy, contribution, alternatives).

    Returns:
        Two heatmaps: log-prob (rows = option × condition) and contribution (rows = option); hover
        shows token id, log-prob, rank, entropy and the top alternatives.
    """
    tokens = check_frame(tokens, "tokens", ["option", "condition", "position", "token", "token_id", "logprob",
                                             "rank", "entropy", "contribution", "alternatives"])
    options = list(dict.fromkeys(tokens["option"]))
    conds = [c for c in ("premise", "domain") if (tokens["condition"] == c).any()]
    width = int(tokens["position"].max()) + 1 if len(tokens) else 1

    def grid(rows: list[tuple[str, str]], value: str) -> tuple[list, list, list]:
        z = np.full((len(rows), width), np.nan)
        txt = np.full((len(rows), width), "", dtype=object)
        hover = np.full((len(rows), width), "", dtype=object)
        for i, (opt, cond) in enumerate(rows):
            sub = tokens[(tokens["option"] == opt) & (tokens["condition"] == cond)]
            for r in sub.itertuples():
                z[i, r.position] = getattr(r, value)
                txt[i, r.position] = esc(visible(r.token))
                alts = "<br>".join(f"  {esc(visible(t))} {lp:.2f}" for t, lp in r.alternatives)
                hover[i, r.position] = (f"{esc(visible(r.token))} id {r.token_id}<br>log-prob {r.logprob:.3f} · "
                                        f"rank {r.rank} · entropy {r.entropy:.2f}<br>DC-PMI contribution "
                                        f"{r.contribution:+.3f}<br>top alternatives:<br>{alts}")
        return [plain(row) for row in z], txt.tolist(), hover.tolist()

    lp_rows = [(o, c) for o in options for c in conds]
    n1, n2 = len(lp_rows), max(len(options), 1)
    top_h = 0.88 * n1 / (n1 + n2)
    z1, t1, h1 = grid(lp_rows, "logprob")
    z2, t2, h2 = grid([(o, "premise") for o in options], "contribution")
    finite = [abs(v) for row in z2 for v in row if v is not None]
    lim = max(finite) if finite else 1.0
    data = [
        {"type": "heatmap", "z": z1, "text": t1, "customdata": h1, "texttemplate": "%{text}",
         "hovertemplate": "%{customdata}<extra></extra>", "y": [f"{option_label(o)} · {c}" for o, c in lp_rows],
         "colorscale": "Viridis", "zmax": 0, "name": "log-prob", "xaxis": "x", "yaxis": "y",
         "colorbar": {"title": {"text": "log-prob"}, "len": 0.55, "y": 0.75}},
        {"type": "heatmap", "z": z2, "text": t2, "customdata": h2, "texttemplate": "%{text}",
         "hovertemplate": "%{customdata}<extra></extra>", "y": [option_label(o) for o in options], "colorscale": "RdBu",
         "zmid": 0, "zmin": -lim, "zmax": lim, "name": "contribution", "xaxis": "x2", "yaxis": "y2",
         "colorbar": {"title": {"text": "Δ nats"}, "len": 0.4, "y": 0.2}},
    ]
    top = {"x": [0, 1], "y": [1 - top_h, 1]}
    bottom = {"x": [0, 1], "y": [0, 1 - top_h - 0.12]}
    layout = base_layout(esc(title), 140 + 34 * (n1 + n2),
                     xaxis={"domain": top["x"], "anchor": "y", "dtick": 1},
                     yaxis={"domain": top["y"], "anchor": "x", "autorange": "reversed"},
                     xaxis2={"domain": bottom["x"], "anchor": "y2", "dtick": 1, "title": {"text": "token position"}},
                     yaxis2={"domain": bottom["y"], "anchor": "x2", "autorange": "reversed"},
                     annotations=[panel_title("log P(token | context, earlier tokens)", top),
                                  panel_title("per-token DC-PMI contribution (premise − domain)", bottom)])
    return figure({"data": data, "layout": layout})


#: Font size of the chance line's label.
CHANCE_FONT = 11


def accuracy_ci(frame: pd.DataFrame, x: str, *, chance: float | None = None,
                title: str = "Accuracy with 95% CI") -> go.Figure:
    """Grouped bars of accuracy per ``x`` value and scorer, with the CI as error bars.

    Args:
        frame: one row per (x, scorer) with ``scorer``, ``accuracy``, ``ci_low`` and ``ci_high``
            (e.g. ``surfacelab.evaluate.ablate`` output).
        x: the column on the x axis (``template``, ``domain_premise``, ...).
        chance: accuracy of guessing (e.g. 0.5 for two classes), drawn as a dashed line; None: no line.
    """
    frame = check_frame(frame, "frame", [x, "scorer", "accuracy", "ci_low", "ci_high"])
    if chance is not None and (not is_number(chance) or not 0 <= chance <= 1):
        raise ValueError(f"chance: expected an accuracy in [0, 1], got {chance!r}")
    data = []
    for scorer, g in frame.groupby("scorer", sort=False):
        data.append({"type": "bar", "x": [esc(v) for v in g[x].astype(str)], "y": plain(g["accuracy"]),
                     "name": esc(scorer), "error_y": {"type": "data", "symmetric": False,
                                                      "array": plain(g["ci_high"] - g["accuracy"]),
                                                      "arrayminus": plain(g["accuracy"] - g["ci_low"])}})
    extra = {}
    if chance is not None:
        extra["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": chance,
                            "y1": chance, "line": {"dash": "dash", "color": "#888", "width": 1.5}}]
        # the label sits in the right margin, at the line's end: inside the plot it covered the last bars
        text = f"chance {chance:.0%}"
        extra["annotations"] = [{"text": text, "xref": "paper", "x": 1, "xanchor": "left", "xshift": 4,
                                 "yref": "y", "y": chance, "yanchor": "middle", "showarrow": False,
                                 "font": {"size": CHANCE_FONT, "color": "#888"}}]
        extra["margin"] = {"l": 10, "r": 14 + round(CHANCE_FONT * 0.62 * len(text)), "t": 48, "b": 10}
    layout = base_layout(esc(title), 380, barmode="group", legend={"orientation": "h", "y": -0.2},
                     yaxis={"range": [0, 1], "tickformat": ".0%", "title": {"text": "accuracy"}}, **extra)
    return figure({"data": data, "layout": layout})
