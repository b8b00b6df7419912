"""Plotly figures built from result frames: pure functions, no display side effects.

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

import html
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from ._checks import check_int, is_int, is_number
from ._format import distinct, visible
from .paraphrase import named_winners, winner_sentences
from .scoring import SCORER_LABELS, SCORER_RANKS

#: Scorer columns of ``MCResult.table`` shown in the scorer table, with their headers, and the rank
#: column that says which option wins each: live views of the scorer registry (``register_scorer``).
SCORER_COLUMNS = SCORER_LABELS
WINNER_FILL = "rgba(46, 160, 67, 0.45)"
GOLD_FILL = "rgba(255, 193, 7, 0.30)"
PLAIN_FILL = "rgba(0, 0, 0, 0)"
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=12)
METRIC_COLORS = {"original": "#4c78a8", "word_l2r": "#f58518", "whole_word": "#54a24b"}
LETTER_COLORS = {"observed": "#4c78a8", "prior": "#bab0ac", "calibrated": "#f58518", "debiased": "#54a24b"}
LETTER_NAMES = {"observed": "observed", "prior": "content-free prior", "calibrated": "calibrated",
                "debiased": "permutation-debiased"}
PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6",
           "#9d755d", "#bab0ac"]


def _check_frame(frame: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}")
    return frame


def check_gold(gold: Any, n: int) -> int | None:
    """``gold`` as an int index into ``n`` options, or None; ``ValueError`` naming ``gold`` otherwise (True, 1.0)."""
    if gold is None:
        return None
    if not is_int(gold) or not 0 <= gold < n:
        raise ValueError(f"gold: expected None or an option index (an int in [0, {n})), got {gold!r}")
    return int(gold)


def esc(text: Any) -> str:
    """``text`` made safe for a plotly string: HTML entities for ``& < >`` and ``&#36;`` for ``$`` (no LaTeX)."""
    return html.escape(str(text), quote=False).replace("$", "&#36;")


def show(option: str, *, limit: int | None = None) -> str:
    """An option as figures show it: leading space as ``␣``, escaped, cut to ``limit`` characters."""
    s = visible(option)
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    return esc(s)


def _plain(values: Any) -> list:
    """A JSON-safe list: numpy scalars to Python numbers, NaN and infinities to None."""
    out = []
    for v in np.asarray(values, dtype=object).tolist():
        if isinstance(v, (float, np.floating)):
            out.append(float(v) if np.isfinite(v) else None)
        elif isinstance(v, np.integer):
            out.append(int(v))
        else:
            out.append(v)
    return out


_TEMPLATE: list[dict] = []


def _template() -> dict:
    """plotly_white cut to the trace types drawn here, as plain JSON (built once)."""
    if not _TEMPLATE:
        white = pio.templates["plotly_white"]
        _TEMPLATE.append(go.layout.Template(layout=white.layout, data={k: white.data[k] for k in
                                                                       ("bar", "heatmap", "table")}
                                            ).to_plotly_json())
    return _TEMPLATE[0]


def _layout(title: str, height: int, **extra: Any) -> dict:
    layout = {"title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}}, "height": height,
              "margin": {"l": 10, "r": 10, "t": 48, "b": 10}, "font": dict(FONT), "template": _template()}
    layout.update(extra)
    return layout


def figure(spec: dict) -> go.Figure:
    """A ``go.Figure`` from a ``*_spec`` dict (validated by plotly)."""
    if not isinstance(spec, dict) or "data" not in spec or "layout" not in spec:
        raise TypeError("spec: expected a dict with 'data' and 'layout' (a *_spec result)")
    return go.Figure(spec)


def _grid(n: int, cols: int, *, hgap: float = 0.08, vgap: float = 0.12, top: float = 1.0) -> list[dict]:
    """Axis domains of ``n`` panels in a grid of ``cols`` columns, filled row by row from the top."""
    rows = max(-(-n // cols), 1)
    width = (1 - hgap * (cols - 1)) / cols
    height = (top - vgap * (rows - 1)) / rows
    cells = []
    for i in range(n):
        r, c = divmod(i, cols)
        x0 = c * (width + hgap)
        y1 = top - r * (height + vgap)
        cells.append({"x": [round(x0, 4), round(min(x0 + width, 1), 4)],
                      "y": [round(max(y1 - height, 0), 4), round(y1, 4)]})
    return cells


def _axes(k: int) -> tuple[str, str, str, str]:
    """Layout keys and trace references of the k-th (0-based) pair of axes."""
    s = "" if k == 0 else str(k + 1)
    return f"xaxis{s}", f"yaxis{s}", f"x{s}", f"y{s}"


def _wrap(text: str, width: int) -> list[str]:
    """``text`` broken into lines of at most about ``width`` characters at spaces ([] for "")."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _tick(text: str, width: int = 16, lines: int = 2) -> str:
    """A category label that fits under a bar: ``text`` wrapped to at most ``lines`` lines of about ``width``
    characters (``<br>``-joined, escaped), cut with "…" when longer (the full text is in the hover)."""
    wrapped = _wrap(text, width) or [text]
    cut = [w if len(w) <= width else w[:width - 1] + "…" for w in wrapped[:lines]]
    if len(wrapped) > lines and not cut[-1].endswith("…"):
        cut[-1] = (cut[-1] if len(cut[-1]) < width else cut[-1][:width - 1]) + "…"
    return "<br>".join(esc(w) for w in cut)


def _panel_title(text: str, domain: dict) -> dict:
    return {"text": text, "x": (domain["x"][0] + domain["x"][1]) / 2, "y": domain["y"][1], "xref": "paper",
            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
            "font": {"size": 12}}


# --- scorer table -------------------------------------------------------------------------------

def scorer_cells(table: pd.DataFrame, gold: int | None = None) -> tuple[list[str], list[list[str]], list[np.ndarray]]:
    """What a scorer table shows, for any renderer: the scorer columns that have a value, each
    column's cells (3 decimals, "–" where not finite) and its winner mask (``rank_<scorer>`` == 1)."""
    table = _check_frame(table, "table", ["option", *SCORER_COLUMNS, *SCORER_RANKS.values()])
    check_gold(gold, len(table))
    cols = [c for c in SCORER_COLUMNS if table[c].notna().any()]
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
    names = [(("★ " if i == gold else "") + show(o)).replace(" ", "\u00a0") for i, o in enumerate(table["option"])]
    row_fill = [GOLD_FILL if i == gold else PLAIN_FILL for i in range(len(table))]
    values, fills = [names], [row_fill]
    for col_cells, col_won in zip(cells, won):
        values.append(col_cells)
        fills.append([WINNER_FILL if win else f for win, f in zip(col_won, row_fill)])
    spec = {"data": [{"type": "table", "columnwidth": [2.2] + [1] * len(cols),
                      "header": {"values": ["option"] + [SCORER_COLUMNS[c].replace(" ", "\u00a0") for c in cols],
                                 "align": "left", "fill": {"color": "rgba(128,128,128,0.15)"},
                                 "font": {"size": 12}},
                      "cells": {"values": values, "fill": {"color": fills}, "align": "left", "height": 26}}],
            "layout": _layout(esc(title), 80 + 28 * len(table))}
    return figure(spec)


# --- tokens ---------------------------------------------------------------------------------------

def token_heatmap(tokens: pd.DataFrame, *, title: str = "Per-token log-prob") -> go.Figure:
    """Heatmap of per-token log-probs per option and condition, and of the per-token DC-PMI contribution.

    Args:
        tokens: ``surfacelab.alternatives.token_view`` output (columns option, condition, position,
            token, token_id, logprob, rank, entropy, contribution, alternatives).

    Returns:
        Two heatmaps: log-prob (rows = option × condition) and contribution (rows = option); hover
        shows token id, log-prob, rank, entropy and the top alternatives.
    """
    tokens = _check_frame(tokens, "tokens", ["option", "condition", "position", "token", "token_id", "logprob",
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
        return [_plain(row) for row in z], txt.tolist(), hover.tolist()

    lp_rows = [(o, c) for o in options for c in conds]
    n1, n2 = len(lp_rows), max(len(options), 1)
    top_h = 0.88 * n1 / (n1 + n2)
    z1, t1, h1 = grid(lp_rows, "logprob")
    z2, t2, h2 = grid([(o, "premise") for o in options], "contribution")
    finite = [abs(v) for row in z2 for v in row if v is not None]
    lim = max(finite) if finite else 1.0
    data = [
        {"type": "heatmap", "z": z1, "text": t1, "customdata": h1, "texttemplate": "%{text}",
         "hovertemplate": "%{customdata}<extra></extra>", "y": [f"{show(o)} · {c}" for o, c in lp_rows],
         "colorscale": "Viridis", "zmax": 0, "name": "log-prob", "xaxis": "x", "yaxis": "y",
         "colorbar": {"title": {"text": "log-prob"}, "len": 0.55, "y": 0.75}},
        {"type": "heatmap", "z": z2, "text": t2, "customdata": h2, "texttemplate": "%{text}",
         "hovertemplate": "%{customdata}<extra></extra>", "y": [show(o) for o in options], "colorscale": "RdBu",
         "zmid": 0, "zmin": -lim, "zmax": lim, "name": "contribution", "xaxis": "x2", "yaxis": "y2",
         "colorbar": {"title": {"text": "Δ nats"}, "len": 0.4, "y": 0.2}},
    ]
    top = {"x": [0, 1], "y": [1 - top_h, 1]}
    bottom = {"x": [0, 1], "y": [0, 1 - top_h - 0.12]}
    layout = _layout(esc(title), 140 + 34 * (n1 + n2),
                     xaxis={"domain": top["x"], "anchor": "y", "dtick": 1},
                     yaxis={"domain": top["y"], "anchor": "x", "autorange": "reversed"},
                     xaxis2={"domain": bottom["x"], "anchor": "y2", "dtick": 1, "title": {"text": "token position"}},
                     yaxis2={"domain": bottom["y"], "anchor": "x2", "autorange": "reversed"},
                     annotations=[_panel_title("log P(token | context, earlier tokens)", top),
                                  _panel_title("per-token DC-PMI contribution (premise − domain)", bottom)])
    return figure({"data": data, "layout": layout})


# --- paraphrase mass ------------------------------------------------------------------------------

def paraphrase_mass_spec(forms: pd.DataFrame, concepts: pd.DataFrame, winners: pd.DataFrame, *,
                         answer: str | None = None, title: str = "Paraphrase mass") -> dict:
    """Plotly JSON of ``paraphrase_mass`` (see there)."""
    forms = _check_frame(forms, "forms", ["concept", "form", "prob", "share_of_listed", "share_of_concept"])
    concepts = _check_frame(concepts, "concepts", ["concept", "share", "domain_share", "dcpmi"])
    winners = _check_frame(winners, "winners", ["scorer", "concept", "form"])
    names = {c: (f"★ {esc(c)}" if c == answer else esc(c)) for c in concepts["concept"]}
    # long options (ARC, MMLU) get short wrapped tick labels, numbered, and the narrow totals panel their numbers
    # alone; the bars keep the full names (hover, data)
    star = ["★ " if c == answer else "" for c in names]
    numbered = len(names) > 4 or any(len(str(c)) > 8 for c in names)
    axis = {"tickmode": "array", "tickvals": list(names.values()), "tickangle": 0, "automargin": True}
    left_ticks = [_tick(f"{s}{i + 1} · {c}" if numbered else f"{s}{c}") for i, (s, c) in enumerate(zip(star, names))]
    right_ticks = [f"{s}{i + 1}" for i, s in enumerate(star)] if numbered else left_ticks
    left, right = {"x": [0, 0.56], "y": [0, 1]}, {"x": [0.68, 1], "y": [0, 1]}
    data = []
    seen: dict[str, int] = {}
    cols = ["concept", "form", "prob", "share_of_listed", "share_of_concept"]
    # each form's DC-PMI (what the form DC-PMI rule ranks) in its hover, where the frame has it
    pmi = [f"<br>form DC-PMI = {v:.3f} (log P(form|premise) − log P(form|domain premise))" if np.isfinite(v) else ""
           for v in forms.get("dcpmi", [np.nan] * len(forms))]
    for concept, form, prob, listed, share, dcpmi in zip(*(forms[c].tolist() for c in cols), pmi):
        j = seen[concept] = seen.get(concept, -1) + 1
        data.append({"type": "bar", "x": [names[concept]], "y": [float(listed)],
                     # a form's name inside its bar where it can be read (a long one is in the hover)
                     "name": show(form), "text": [show(form) if len(visible(form)) <= 14 else ""],
                     "textposition": "inside", "textangle": 0,
                     "marker": {"color": PALETTE[j % len(PALETTE)]}, "showlegend": False,
                     "xaxis": "x", "yaxis": "y",
                     "hovertemplate": f"{show(form)}<br>P(form|premise) = {prob:.3g}<br>"
                                      f"{share:.1%} of its concept · {listed:.1%} of all "
                                      f"listed forms{dcpmi}<extra>{esc(concept)}</extra>"})
    x = [names[c] for c in concepts["concept"]]
    totals = [("premise", "share", "#4c78a8")]
    if concepts["domain_share"].notna().any():
        totals.append(("domain premise", "domain_share", "#bab0ac"))
    for name, col, color in totals:
        data.append({"type": "bar", "x": x, "y": _plain(concepts[col]), "name": name, "offsetgroup": name,
                     "marker": {"color": color}, "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                     "hovertemplate": "%{x}: %{y:.1%} of the listed mass<extra>" + name + "</extra>"})
    # the key of the totals' colours sits in their panel title (a legend under the bars met the tick labels)
    key = " ".join(f"<span style='color:{color}'>■</span> {name}" for name, _, color in totals)
    # a rule that picks a form names the form and its concept, one rule a line (two a line ran past a 560 px view);
    # what form DC-PMI is, is said in each form's hover and in the reading under the figure
    won = named_winners(winners, lambda s: f"<b>{show(s, limit=30)}</b>")
    lines = "<br>".join(won)
    layout = _layout(f"{esc(title)}<br><sup>winners — {lines}</sup>", 330 + 20 * len(won), barmode="stack",
                     margin={"l": 10, "r": 10, "t": 70 + 20 * len(won), "b": 10},
                     uniformtext={"minsize": 9, "mode": "hide"},
                     xaxis={"domain": left["x"], "anchor": "y", "ticktext": left_ticks, **axis},
                     yaxis={"domain": left["y"], "anchor": "x", "tickformat": ".0%", "range": [0, 1]},
                     xaxis2={"domain": right["x"], "anchor": "y2", "ticktext": right_ticks, **axis},
                     yaxis2={"domain": right["y"], "anchor": "x2", "tickformat": ".0%", "range": [0, 1]},
                     annotations=[_panel_title("share of listed mass, by surface form", left),
                                  _panel_title(f"concept totals<br>{key}", right)])
    # the title hangs from the top (plotly places a multi-line title by its first line), clear of the panel titles
    layout["title"].update(y=1, yref="container", yanchor="top", pad={"t": 12})
    return {"data": data, "layout": layout}


def paraphrase_mass(forms: pd.DataFrame, concepts: pd.DataFrame, winners: pd.DataFrame, *,
                    answer: str | None = None, title: str = "Paraphrase mass") -> go.Figure:
    """Stacked bars of each concept's mass split over its surface forms, concept totals and winners.

    Args:
        forms: ``MassResult.forms``; concepts: ``MassResult.concepts``; winners: ``MassResult.winners``.
        answer: the intended concept (gets a ★), or None.

    Returns:
        Left: one bar per concept stacked from its forms' ``share_of_listed``; right: concept
        share under the premise and under the domain premise; the title names the winners.
    """
    return figure(paraphrase_mass_spec(forms, concepts, winners, answer=answer, title=title))


def mass_reading(concepts: pd.DataFrame, winners: pd.DataFrame, *, answer: str | None = None) -> str:
    """A few sentences on a ``MassResult``: which form or concept wins under each rule and why, forms written as the
    figure shows them (``paraphrase.winner_sentences``, which ``MassResult.explain`` says too)."""
    concepts = _check_frame(concepts, "concepts", ["concept", "share", "n_forms", "best_form_logprob",
                                                   "best_form_share"])
    winners = _check_frame(winners, "winners", ["scorer", "concept", "form"])
    return " ".join(winner_sentences(concepts, winners, answer, quote=lambda s: repr(visible(s))))


# --- letters --------------------------------------------------------------------------------------

def letter_priors_spec(table: pd.DataFrame, *, gold: int | None = None,
                       title: str = "Option-letter probabilities") -> dict:
    """Plotly JSON of ``letter_priors`` (see there)."""
    table = _check_frame(table, "table", ["id"])
    series = [c for c in LETTER_COLORS if c in table.columns]
    if not series:
        raise ValueError(f"table: needs at least one of the columns {list(LETTER_COLORS)}")
    gold = check_gold(gold, len(table))
    ids = [("★ " if k == gold else "") + esc(i) for k, i in enumerate(table["id"])]
    if "option" in table.columns:
        ids = [f"{i} · {show(o, limit=18)}" for i, o in zip(ids, table["option"])]
    data = [{"type": "bar", "x": ids, "y": _plain(table[c]), "name": LETTER_NAMES[c],
             "marker": {"color": LETTER_COLORS[c]},
             "hovertemplate": "%{x}: %{y:.1%}<extra>" + LETTER_NAMES[c] + "</extra>"} for c in series]
    layout = _layout(esc(title), 340, barmode="group", legend={"orientation": "h", "y": -0.18},
                     yaxis={"title": {"text": "probability"}, "tickformat": ".0%"})
    return {"data": data, "layout": layout}


def letter_priors(table: pd.DataFrame, *, gold: int | None = None,
                  title: str = "Option-letter probabilities") -> go.Figure:
    """Grouped bars per option ID: observed, content-free prior, calibrated and permutation-debiased.

    Args:
        table: one row per option ID with columns ``id`` and any of ``observed``, ``prior``,
            ``calibrated``, ``debiased`` (probabilities); with an ``option`` column the ticks name
            the option too ("A · ␣bathtub").
        gold: index of the gold option (its ID gets a ★), or None.
    """
    return figure(letter_priors_spec(table, gold=gold, title=title))


def letters_reading(table: pd.DataFrame, *, orders: int | None = None) -> str:
    """One sentence on a ``LetterResult.table``: the observed pick, the letter prior, the calibrated and
    debiased picks (``orders``: how many option orders the debiasing averaged)."""
    table = _check_frame(table, "table", ["id", "option", "observed", "prior", "calibrated", "debiased"])
    pick = {c: int(np.argmax(table[c].to_numpy(dtype=float))) for c in ("observed", "prior", "calibrated",
                                                                         "debiased")}

    def name(k: int) -> str:
        return f"{table['id'].iloc[k]} ({visible(str(table['option'].iloc[k]))!r})"

    o = pick["observed"]
    shares = distinct([table["observed"].iloc[o], table["prior"].iloc[o]], percent=True)
    out = f"Asked for a letter, the model picks {name(o)} with {shares[0]}"
    if pick["prior"] == o:
        out += (f"; with the question blanked out it still gives {table['id'].iloc[o]} {shares[1]}, so part of "
                f"that pick is a preference for the letter")
    else:
        out += (f"; with the question blanked out it prefers {table['id'].iloc[pick['prior']]} "
                f"(letter prior), so the pick is not the letter's doing alone")
    same = pick["calibrated"] == o and pick["debiased"] == o
    orders_txt = f"the {orders} option orders" if orders else "the option orders"
    if same:
        out += f". Calibration and averaging over {orders_txt} keep {name(o)}."
    else:
        out += (f". Calibrated, the pick is {name(pick['calibrated'])}; averaged over {orders_txt} "
                f"(each option shown under every letter), it is {name(pick['debiased'])}.")
    return out


# --- PLL ------------------------------------------------------------------------------------------

def pll_subwords_spec(tokens: pd.DataFrame, *, note: str = "", cols: int = 1, title: str = "PLL by subword") -> dict:
    """Plotly JSON of ``pll_subwords`` (see there)."""
    tokens = _check_frame(tokens, "tokens", ["sentence", "metric", "position", "subword", "logprob"])
    check_int("cols", cols, 1)
    sentences = list(dict.fromkeys(tokens["sentence"]))
    cols = min(cols, max(len(sentences), 1))
    rows = max(-(-len(sentences) // cols), 1)
    cells = _grid(len(sentences), cols, hgap=0.06, vgap=0.45 / rows, top=1.0)
    metrics = list(dict.fromkeys(tokens["metric"]))
    data, layout_axes, notes = [], {}, []
    for i, s in enumerate(sentences):
        xk, yk, xr, yr = _axes(i)
        sub = tokens[tokens["sentence"] == s]
        for m in metrics:
            g = sub[sub["metric"] == m].sort_values("position")
            data.append({"type": "bar", "x": [f"{p}:{esc(t)}" for p, t in zip(g["position"], g["subword"])],
                         "y": _plain(g["logprob"]), "name": m, "legendgroup": m, "showlegend": i == 0,
                         "marker": {"color": METRIC_COLORS.get(m)}, "xaxis": xr, "yaxis": yr,
                         "hovertemplate": "%{x}: %{y:.3f}<extra>" + m + f" (total {g['logprob'].sum():.2f})</extra>"})
        layout_axes[xk] = {"domain": cells[i]["x"], "anchor": yr, "tickangle": -45, "tickfont": {"size": 10}}
        layout_axes[yk] = {"domain": cells[i]["y"], "anchor": xr, **({"matches": "y"} if i else {})}  # one scale
        if i % cols == 0:
            layout_axes[yk]["title"] = {"text": "log-prob"}
        notes.append(_panel_title(esc(s if len(s) < 70 else s[:67] + "…"), cells[i]))
    full = esc(title) + (f"<br><sup>{esc(note)}</sup>" if note else "")
    layout = _layout(full, 140 + 230 * rows, barmode="group", annotations=notes,
                     legend={"orientation": "h", "y": -0.08, "yanchor": "top", "x": 0}, **layout_axes)
    if note:
        layout["margin"] = {"l": 10, "r": 10, "t": 90, "b": 10}
    return {"data": data, "layout": layout}


def pll_subwords(tokens: pd.DataFrame, *, note: str = "", cols: int = 1, title: str = "PLL by subword") -> go.Figure:
    """Per-subword log-prob bars under each PLL metric, one panel per sentence.

    Args:
        tokens: one row per (sentence, metric, subword) with columns ``sentence``, ``metric``,
            ``position``, ``subword`` and ``logprob`` (the ``PLLResult.tokens`` of each metric,
            concatenated with a ``metric`` column).
        note: the masked LM's caveat (``MLM.note``), printed under the title when given.
        cols: panels per row.
    """
    return figure(pll_subwords_spec(tokens, note=note, cols=cols, title=title))


def _option_part(tokens: pd.DataFrame, premise: str) -> pd.Series:
    """True for the subwords of premise+option that touch the option (they end after the premise)."""
    return tokens["char_end"] > len(premise)


def pll_totals(table: pd.DataFrame, options: Sequence[str]) -> pd.DataFrame:
    """Per-sentence PLL totals as one row per option and one column per metric, plus ``winner_<metric>``.

    Args:
        table: the ``PLLResult.table`` of each metric concatenated with a ``metric`` column
            (``sentence_idx`` i is premise + ``options[i]``).
        options: the options, in sentence order.
    """
    table = _check_frame(table, "table", ["sentence_idx", "metric", "pll"])
    wide = table.pivot(index="sentence_idx", columns="metric", values="pll")
    metrics = [m for m in METRIC_COLORS if m in wide.columns]
    wide = wide[metrics].reindex(range(len(options)))
    out = pd.DataFrame({"option": list(options)})
    for m in metrics:
        out[m] = wide[m].to_numpy()
        out[f"winner_{m}"] = out[m] == out[m].max()
    return out


def pll_options_spec(tokens: pd.DataFrame, *, premise: str, options: Sequence[str], gold: int | None = None,
                     note: str = "", title: str = "PLL of each option, subword by subword") -> dict:
    """Plotly JSON of ``pll_options`` (see there)."""
    tokens = _check_frame(tokens, "tokens", ["sentence_idx", "metric", "position", "subword", "logprob", "char_end",
                                             "word", "n_subwords", "subword_idx"])
    gold = check_gold(gold, len(options))
    n = len(options)
    cols = 2 if n > 1 else 1
    rows = max(-(-n // cols), 1)
    cells = _grid(n, cols, hgap=0.08, vgap=0.5 / rows, top=1.0)
    present = set(tokens["metric"])
    metrics = [m for m in METRIC_COLORS if m in present]
    # one pass over the rows (per-group pandas indexing costs more than the rest of a live update)
    buckets: dict[tuple[int, str], list[tuple]] = {}
    cols_ = ["sentence_idx", "metric", "position", "subword", "logprob", "char_end", "word", "n_subwords",
             "subword_idx"]
    for row in zip(*(tokens[c].tolist() for c in cols_)):
        buckets.setdefault((row[0], row[1]), []).append(row[2:])
    data, axes, notes = [], {}, []
    ticks: list[str] = []
    for i, option in enumerate(options):
        xk, yk, xr, yr = _axes(i)
        for m in metrics:
            rows_ = sorted(buckets.get((i, m), []))
            pre = [r[2] for r in rows_ if r[3] <= len(premise)]
            xs, ys, hover, alpha = [], [], [], []
            if pre:
                total = float(np.sum(pre))
                xs.append(f"premise (⌀ of {len(pre)})")
                ys.append(total / len(pre))
                hover.append(f"premise: {len(pre)} subwords, total {total:.2f}, mean {total / len(pre):.2f}")
                alpha.append(0.35)
            for _, subword, lp, end, word, n_sub, sub_idx in (r for r in rows_ if r[3] > len(premise)):
                xs.append(esc(subword))
                ys.append(float(lp))
                part = f", subword {sub_idx + 1} of {n_sub}" if n_sub > 1 else ""
                hover.append(f"{esc(subword)} (word {esc(word)}{part}): {lp:.3f}")
                alpha.append(1.0)
            ticks = xs
            data.append({"type": "bar", "x": list(range(len(xs))), "y": ys, "name": m, "legendgroup": m,
                         "showlegend": i == 0, "marker": {"color": METRIC_COLORS[m], "opacity": alpha},
                         "customdata": hover,
                         "xaxis": xr, "yaxis": yr, "hovertemplate": "%{customdata}<extra>" + m + "</extra>"})
        axes[xk] = {"domain": cells[i]["x"], "anchor": yr, "tickfont": {"size": 10}, "automargin": True,
                    "tickmode": "array", "tickvals": list(range(len(ticks))), "ticktext": ticks}
        # one y scale for every panel: a bar's height compares across options
        axes[yk] = {"domain": cells[i]["y"], "anchor": xr, "automargin": True, **({"matches": "y"} if i else {})}
        if i % cols == 0:
            axes[yk]["title"] = {"text": "log-prob"}
        notes.append(_panel_title(("★ " if i == gold else "") + show(option, limit=48), cells[i]))
    lines = _wrap(note, 90)
    full = esc(title) + "".join(f"<br><sup>{esc(line)}</sup>" for line in lines)
    layout = _layout(full, 170 + 210 * rows + 18 * len(lines), barmode="group", annotations=notes,
                     margin={"l": 10, "r": 10, "t": 64 + 18 * len(lines), "b": 10},
                     legend={"orientation": "h", "y": -0.12, "yanchor": "top", "x": 0}, **axes)
    # the title and its note hang from the top (plotly places a multi-line title by its first line, hence the
    # pad), so that the first row's panel titles keep clear of the note
    layout["title"].update(y=1, yref="container", yanchor="top", pad={"t": 26})
    return {"data": data, "layout": layout}


def pll_options(tokens: pd.DataFrame, *, premise: str, options: Sequence[str], gold: int | None = None,
                note: str = "", title: str = "PLL of each option, subword by subword") -> go.Figure:
    """PLL bars of each premise+option sentence that focus on the option: one panel per option with a bar
    per option subword and metric, and the premise's subwords collapsed into one grey bar (their mean).

    Args:
        tokens: the ``PLLResult.tokens`` of each metric concatenated with a ``metric`` column, for the
            sentences ``premise + options[i]`` (``sentence_idx`` i).
        premise: the premise the options were appended to (its characters are the premise part).
        options: the options, in sentence order.
        gold: index of the gold option (★ on its panel), or None.
        note: the masked LM's caveat, printed under the title.
    """
    return figure(pll_options_spec(tokens, premise=premise, options=options, gold=gold, note=note, title=title))


def pll_reading(tokens: pd.DataFrame, totals: pd.DataFrame, *, premise: str, unknown_id: int | None = None) -> str:
    """Sentences on the PLL view: the winner under each metric, whether (and why) the metrics coincide, and the
    options the masked LM reads as its unknown token.

    Args:
        tokens: as for ``pll_options`` (with ``token_id`` when ``unknown_id`` is given); totals: ``pll_totals``
            output.
        premise: the premise (the split words of the option part are named).
        unknown_id: the masked LM's unknown-token id ([UNK]), or None.
    """
    tokens = _check_frame(tokens, "tokens", ["sentence_idx", "metric", "word", "n_subwords", "subword",
                                             "char_end", "subword_idx"] + (["token_id"] if unknown_id is not None
                                                                           else []))
    metrics = [m for m in METRIC_COLORS if m in totals.columns]
    winners = {m: [visible(o) for o, w in zip(totals["option"], totals[f"winner_{m}"]) if w] for m in metrics}
    if len({tuple(v) for v in winners.values()}) == 1:
        out = [f"Every metric picks {' and '.join(repr(o) for o in next(iter(winners.values())))}."]
    else:
        out = ["Winners: " + "; ".join(f"{m} → {' and '.join(repr(o) for o in w)}" for m, w in winners.items()) + "."]
    first = tokens[tokens["metric"] == tokens["metric"].iloc[0]] if len(tokens) else tokens
    split = first[(first["n_subwords"] > 1) & (first["subword_idx"] == 0)]
    if split.empty:
        out.append("All words here are single subwords, so the three metrics mask exactly the same token each time "
                   "and give identical numbers; they differ only on words split into several subwords "
                   "(try a rare word such as ' washbasin').")
    else:
        own = split[_option_part(split, premise)]
        names = list(dict.fromkeys((own if len(own) else split)["word"]))[:4]
        where = "in the options" if len(own) else "in the premise only"
        out.append(f"Words split into subwords {where} ({', '.join(repr(w) for w in names)}) make the metrics differ: "
                   "original sees the word's other pieces when scoring one, word_l2r hides the later pieces, "
                   "whole_word hides them all.")
    if unknown_id is not None and len(first):
        unread = first[(first["token_id"] == unknown_id) & _option_part(first, premise)]
        for i in sorted(set(unread["sentence_idx"])):
            words = list(dict.fromkeys(unread.loc[unread["sentence_idx"] == i, "word"]))
            out.append(f"Option {i + 1}, {visible(totals['option'].iloc[i])!r}, has text the masked LM does not know "
                       f"({', '.join(repr(w) for w in words)} read as its unknown token): its PLL scores that token, "
                       "not what was typed.")
    return " ".join(out)


# --- evaluation -----------------------------------------------------------------------------------

def accuracy_ci(frame: pd.DataFrame, x: str, *, chance: float | None = None,
                title: str = "Accuracy with 95% CI") -> go.Figure:
    """Grouped bars of accuracy per ``x`` value and scorer, with the CI as error bars.

    Args:
        frame: one row per (x, scorer) with ``scorer``, ``accuracy``, ``ci_low`` and ``ci_high``
            (e.g. ``surfacelab.evaluate.ablate`` output).
        x: the column on the x axis (``template``, ``domain_premise``, ...).
        chance: accuracy of guessing (e.g. 0.5 for two classes), drawn as a dashed line; None: no line.
    """
    frame = _check_frame(frame, "frame", [x, "scorer", "accuracy", "ci_low", "ci_high"])
    if chance is not None and (not is_number(chance) or not 0 <= chance <= 1):
        raise ValueError(f"chance: expected an accuracy in [0, 1], got {chance!r}")
    data = []
    for scorer, g in frame.groupby("scorer", sort=False):
        data.append({"type": "bar", "x": [esc(v) for v in g[x].astype(str)], "y": _plain(g["accuracy"]),
                     "name": esc(scorer), "error_y": {"type": "data", "symmetric": False,
                                                      "array": _plain(g["ci_high"] - g["accuracy"]),
                                                      "arrayminus": _plain(g["accuracy"] - g["ci_low"])}})
    extra = {}
    if chance is not None:
        extra["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "yref": "y", "y0": chance,
                            "y1": chance, "line": {"dash": "dash", "color": "#888", "width": 1.5}}]
        extra["annotations"] = [{"text": f"chance {chance:.0%}", "xref": "paper", "x": 1, "xanchor": "right",
                                 "yref": "y", "y": chance, "yanchor": "bottom", "showarrow": False,
                                 "font": {"size": 11, "color": "#888"}}]
    layout = _layout(esc(title), 380, barmode="group", legend={"orientation": "h", "y": -0.2},
                     yaxis={"range": [0, 1], "tickformat": ".0%", "title": {"text": "accuracy"}}, **extra)
    return figure({"data": data, "layout": layout})


def save(fig: go.Figure, path: str | Path, *, scale: float = 2.0) -> Path:
    """Write ``fig`` as PNG (``*.png``, via kaleido) or standalone HTML (``*.html``).

    Returns:
        The path written.
    """
    if not isinstance(fig, go.Figure):
        raise TypeError(f"fig: expected a plotly Figure, got {type(fig).__name__}")
    path = Path(path)
    if path.suffix == ".png":
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.write_image(path, scale=scale)
    elif path.suffix == ".html":
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.write_html(path, include_plotlyjs=True)
    else:
        raise ValueError(f"path: expected a .png or .html file name, got {path.name!r}")
    return path
