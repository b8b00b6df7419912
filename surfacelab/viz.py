"""Plotly figures built from result frames: pure functions, no display side effects.

Every function takes the tidy frames of a result object (or the object itself, only to read its
frames) and returns a ``plotly.graph_objects.Figure``; nothing here scores text. ``save(fig, path)``
writes PNG (kaleido, needs a Chromium) or standalone HTML.

>>> r = sl.score(lm, "The man took a bath in the", [" bathtub", " tub"], domain_premise=" the")  # doctest: +SKIP
>>> scorer_table(r.table, gold=0).show()                                                        # doctest: +SKIP
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from plotly.subplots import make_subplots

#: Scorer columns of ``MCResult.table`` shown in the scorer table, with their headers.
SCORER_COLUMNS = {"logprob": "LM", "avg_token": "Avg", "per_char": "per char", "per_byte": "per byte",
                  "unc": "Unc", "dcpmi": "DC-PMI", "pmi_null": "PMI-null"}
#: The rank column of ``MCResult.table`` that says which option wins each scorer column.
SCORER_RANKS = {"logprob": "rank_lm", "avg_token": "rank_avg", "per_char": "rank_per_char",
                "per_byte": "rank_per_byte", "unc": "rank_unc", "dcpmi": "rank_dcpmi", "pmi_null": "rank_pmi_null"}
WINNER_FILL = "rgba(46, 160, 67, 0.45)"
GOLD_FILL = "rgba(255, 193, 7, 0.30)"
PLAIN_FILL = "rgba(0, 0, 0, 0)"
FONT = dict(family="Inter, Helvetica, Arial, sans-serif", size=12)
METRIC_COLORS = {"original": "#4c78a8", "word_l2r": "#f58518", "whole_word": "#54a24b"}
LETTER_COLORS = {"observed": "#4c78a8", "prior": "#bab0ac", "calibrated": "#f58518", "debiased": "#54a24b"}


def _check_frame(frame: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name}: expected a pandas DataFrame, got {type(frame).__name__}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name}: missing column(s) {missing}")
    return frame


_TEMPLATE: list[go.layout.Template] = []


def _template() -> go.layout.Template:
    """plotly_white cut to the trace types drawn here; the full template costs plotly ~20 ms of
    validation per figure (most of a live update's drawing time), this one about a third of it."""
    if not _TEMPLATE:
        white = pio.templates["plotly_white"]
        _TEMPLATE.append(go.layout.Template(layout=white.layout, data={k: white.data[k] for k in ("bar", "heatmap", "table")}))
    return _TEMPLATE[0]


def _layout(fig: go.Figure, title: str, height: int) -> go.Figure:
    fig.update_layout(title=dict(text=title, x=0.01, xanchor="left", font=dict(size=14)), height=height,
                      margin=dict(l=10, r=10, t=48, b=10), font=FONT, template=_template())
    return fig


def _label(option: str, gold: bool) -> str:
    return f"★ {option!r}" if gold else repr(option)


def scorer_cells(table: pd.DataFrame, gold: int | None = None) -> tuple[list[str], list[list[str]], list[np.ndarray]]:
    """What a scorer table shows, for any renderer: the scorer columns that have a value, each
    column's cells (3 decimals, "–" where not finite) and its winner mask (``rank_<scorer>`` == 1)."""
    table = _check_frame(table, "table", ["option", *SCORER_COLUMNS, *SCORER_RANKS.values()])
    if gold is not None and not 0 <= gold < len(table):
        raise ValueError(f"gold: expected an option index in [0, {len(table)}), got {gold!r}")
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
    names = [_label(o, i == gold).replace(" ", "\u00a0") for i, o in enumerate(table["option"])]
    row_fill = [GOLD_FILL if i == gold else PLAIN_FILL for i in range(len(table))]
    values, fills = [names], [row_fill]
    for col_cells, col_won in zip(cells, won):
        values.append(col_cells)
        fills.append([WINNER_FILL if win else f for win, f in zip(col_won, row_fill)])
    fig = go.Figure(go.Table(
        header=dict(values=["option"] + [SCORER_COLUMNS[c].replace(" ", "\u00a0") for c in cols], align="left",
                    fill_color="rgba(128,128,128,0.15)", font=dict(size=12)),
        cells=dict(values=values, fill_color=fills, align="left", height=26),
        columnwidth=[2.2] + [1] * len(cols)))
    return _layout(fig, title, 80 + 28 * len(table))


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

    def grid(rows: list[tuple[str, str]], value: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        z = np.full((len(rows), width), np.nan)
        txt = np.full((len(rows), width), "", dtype=object)
        hover = np.full((len(rows), width), "", dtype=object)
        for i, (opt, cond) in enumerate(rows):
            sub = tokens[(tokens["option"] == opt) & (tokens["condition"] == cond)]
            for r in sub.itertuples():
                z[i, r.position] = getattr(r, value)
                txt[i, r.position] = r.token.replace(" ", "\u00b7").replace("\n", "\u21b5")  # visible spaces
                alts = "<br>".join(f"  {t!r} {lp:.2f}" for t, lp in r.alternatives)
                hover[i, r.position] = (f"{r.token!r} id {r.token_id}<br>log-prob {r.logprob:.3f} · rank {r.rank}"
                                        f" · entropy {r.entropy:.2f}<br>DC-PMI contribution "
                                        f"{r.contribution:+.3f}<br>top alternatives:<br>{alts}")
        return z, txt, hover

    lp_rows = [(o, c) for o in options for c in conds]
    z1, t1, h1 = grid(lp_rows, "logprob")
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.12, row_heights=[len(lp_rows), max(len(options), 1)],
                        subplot_titles=("log P(token | context, earlier tokens)",
                                        "per-token DC-PMI contribution (premise − domain)"))
    fig.add_trace(go.Heatmap(z=z1, text=t1, customdata=h1, texttemplate="%{text}", hovertemplate="%{customdata}"
                             "<extra></extra>", y=[f"{o!r} · {c}" for o, c in lp_rows], colorscale="Viridis",
                             zmax=0, colorbar=dict(title="log-prob", len=0.55, y=0.75), name="log-prob"), 1, 1)
    z2, t2, h2 = grid([(o, "premise") for o in options], "contribution")
    lim = float(np.nanmax(np.abs(z2))) if np.isfinite(z2).any() else 1.0
    fig.add_trace(go.Heatmap(z=z2, text=t2, customdata=h2, texttemplate="%{text}", hovertemplate="%{customdata}"
                             "<extra></extra>", y=[repr(o) for o in options], colorscale="RdBu", zmid=0,
                             zmin=-lim, zmax=lim, colorbar=dict(title="Δ nats", len=0.4, y=0.2),
                             name="contribution"), 2, 1)
    fig.update_xaxes(title_text="token position", dtick=1, row=2, col=1)
    fig.update_xaxes(dtick=1, row=1, col=1)
    fig.update_yaxes(autorange="reversed")
    return _layout(fig, title, 140 + 34 * (len(lp_rows) + len(options)))


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
    forms = _check_frame(forms, "forms", ["concept", "form", "prob", "share_of_listed", "share_of_concept"])
    concepts = _check_frame(concepts, "concepts", ["concept", "share", "domain_share", "dcpmi"])
    winners = _check_frame(winners, "winners", ["scorer", "concept"])
    names = {c: (f"★ {c}" if c == answer else c) for c in concepts["concept"]}
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.12,
                        subplot_titles=("share of listed mass, by surface form", "concept totals"))
    palette = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6",
               "#9d755d", "#bab0ac"]
    for concept, g in forms.groupby("concept", sort=False):
        for j, r in enumerate(g.itertuples()):
            fig.add_trace(go.Bar(x=[names[concept]], y=[r.share_of_listed], name=r.form, text=[r.form.strip()],
                                 textposition="inside", marker_color=palette[j % len(palette)], showlegend=False,
                                 hovertemplate=f"{r.form!r}<br>P(form|premise) = {r.prob:.3g}<br>"
                                               f"{r.share_of_concept:.0%} of its concept<extra>{concept}</extra>"),
                          1, 1)
    x = [names[c] for c in concepts["concept"]]
    fig.add_trace(go.Bar(x=x, y=concepts["share"], name="premise", marker_color="#4c78a8",
                         legendgroup="totals"), 1, 2)
    if concepts["domain_share"].notna().any():
        fig.add_trace(go.Bar(x=x, y=concepts["domain_share"], name="domain premise", marker_color="#bab0ac",
                             legendgroup="totals"), 1, 2)
    fig.update_layout(barmode="stack")
    fig.update_yaxes(tickformat=".0%", range=[0, 1])
    labels = {"lm": "LM", "mass": "concept mass", "dcpmi": "DC-PMI", "dcpmi_form": "form DC-PMI"}
    won = " · ".join(f"{labels.get(r.scorer, r.scorer)}: <b>{r.concept}</b>" for r in winners.itertuples())
    fig = _layout(fig, f"{title}<br><sup>winners — {won}</sup>", 360)
    fig.update_layout(margin=dict(t=80), legend=dict(orientation="h", y=-0.12))
    # the right panel shows grouped (not stacked) totals
    for tr in fig.data:
        if tr.legendgroup == "totals":
            tr.offsetgroup = tr.name
    return fig


def letter_priors(table: pd.DataFrame, *, gold: int | None = None,
                  title: str = "Option-letter probabilities") -> go.Figure:
    """Grouped bars per option ID: observed, content-free prior, calibrated and permutation-debiased.

    Args:
        table: one row per option ID with columns ``id`` and any of ``observed``, ``prior``,
            ``calibrated``, ``debiased`` (probabilities).
        gold: index of the gold option (its ID gets a ★), or None.
    """
    table = _check_frame(table, "table", ["id"])
    series = [c for c in LETTER_COLORS if c in table.columns]
    if not series:
        raise ValueError(f"table: needs at least one of the columns {list(LETTER_COLORS)}")
    ids = [f"★ {i}" if k == gold else str(i) for k, i in enumerate(table["id"])]
    names = {"observed": "observed", "prior": "content-free prior", "calibrated": "calibrated",
             "debiased": "permutation-debiased"}
    fig = go.Figure([go.Bar(x=ids, y=table[c], name=names[c], marker_color=LETTER_COLORS[c],
                            hovertemplate="%{x}: %{y:.3f}<extra>" + names[c] + "</extra>") for c in series])
    fig.update_layout(barmode="group", yaxis=dict(title="probability", tickformat=".0%"),
                      legend=dict(orientation="h", y=-0.15))
    return _layout(fig, title, 340)


def pll_subwords(tokens: pd.DataFrame, *, note: str = "", cols: int = 1, title: str = "PLL by subword") -> go.Figure:
    """Per-subword log-prob bars under each PLL metric, one panel per sentence.

    Args:
        tokens: one row per (sentence, metric, subword) with columns ``sentence``, ``metric``,
            ``position``, ``subword`` and ``logprob`` (the ``PLLResult.tokens`` of each metric,
            concatenated with a ``metric`` column).
        note: the masked LM's caveat (``MLM.note``), printed under the title when given.
        cols: panels per row.
    """
    tokens = _check_frame(tokens, "tokens", ["sentence", "metric", "position", "subword", "logprob"])
    if isinstance(cols, bool) or not isinstance(cols, int) or cols < 1:
        raise ValueError(f"cols: expected an int >= 1, got {cols!r}")
    sentences = list(dict.fromkeys(tokens["sentence"]))
    cols = min(cols, max(len(sentences), 1))
    rows = max(-(-len(sentences) // cols), 1)
    fig = make_subplots(rows=rows, cols=cols, vertical_spacing=0.45 / rows, horizontal_spacing=0.06,
                        subplot_titles=[s if len(s) < 70 else s[:67] + "…" for s in sentences])
    metrics = list(dict.fromkeys(tokens["metric"]))
    for i, s in enumerate(sentences):
        sub = tokens[tokens["sentence"] == s]
        for m in metrics:
            g = sub[sub["metric"] == m].sort_values("position")
            fig.add_trace(go.Bar(x=[f"{p}:{t}" for p, t in zip(g["position"], g["subword"])], y=g["logprob"],
                                 name=m, legendgroup=m, showlegend=i == 0,
                                 marker_color=METRIC_COLORS.get(m), hovertemplate="%{x}: %{y:.3f}<extra>" + m
                                 + f" (total {g['logprob'].sum():.2f})</extra>"), i // cols + 1, i % cols + 1)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.08, yanchor="top", x=0))
    fig.update_yaxes(title_text="log-prob", col=1)
    fig.update_xaxes(tickangle=-45, tickfont=dict(size=10))
    full = title + (f"<br><sup>{note}</sup>" if note else "")
    fig = _layout(fig, full, 140 + 230 * rows)
    if note:
        fig.update_layout(margin=dict(t=90))
    for a in fig.layout.annotations:
        a.font = dict(size=12)
    return fig


def accuracy_ci(frame: pd.DataFrame, x: str, *, title: str = "Accuracy with 95% CI") -> go.Figure:
    """Grouped bars of accuracy per ``x`` value and scorer, with the CI as error bars.

    Args:
        frame: one row per (x, scorer) with ``scorer``, ``accuracy``, ``ci_low`` and ``ci_high``
            (e.g. ``surfacelab.evaluate.ablate`` output).
        x: the column on the x axis (``template``, ``domain_premise``, ...).
    """
    frame = _check_frame(frame, "frame", [x, "scorer", "accuracy", "ci_low", "ci_high"])
    fig = go.Figure()
    for scorer, g in frame.groupby("scorer", sort=False):
        fig.add_trace(go.Bar(x=g[x].astype(str), y=g["accuracy"], name=scorer,
                             error_y=dict(type="data", symmetric=False, array=g["ci_high"] - g["accuracy"],
                                          arrayminus=g["accuracy"] - g["ci_low"])))
    fig.update_layout(barmode="group", yaxis=dict(range=[0, 1], tickformat=".0%", title="accuracy"),
                      legend=dict(orientation="h", y=-0.2))
    return _layout(fig, title, 380)


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
