"""Masked-LM PLL figures: per-subword bars, per-option totals, and their reading."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .._checks import check_int
from .._format import visible
from .base import (METRIC_COLORS, axis_keys, check_frame, check_gold, esc, figure, grid, base_layout, option_label,
                  panel_title, plain, wrap)


def pll_subwords_spec(tokens: pd.DataFrame, *, note: str = "", cols: int = 1, title: str = "PLL by subword") -> dict:
    """Plotly JSON of ``pll_subwords`` (see there)."""
    tokens = check_frame(tokens, "tokens", ["sentence", "metric", "position", "subword", "logprob"])
    check_int("cols", cols, 1)
    sentences = list(dict.fromkeys(tokens["sentence"]))
    cols = min(cols, max(len(sentences), 1))
    rows = max(-(-len(sentences) // cols), 1)
    cells = grid(len(sentences), cols, hgap=0.06, vgap=0.45 / rows, top=1.0)
    metrics = list(dict.fromkeys(tokens["metric"]))
    data, layout_axes, notes = [], {}, []
    for i, s in enumerate(sentences):
        xk, yk, xr, yr = axis_keys(i)
        sub = tokens[tokens["sentence"] == s]
        for m in metrics:
            g = sub[sub["metric"] == m].sort_values("position")
            data.append({"type": "bar", "x": [f"{p}:{esc(t)}" for p, t in zip(g["position"], g["subword"])],
                         "y": plain(g["logprob"]), "name": m, "legendgroup": m, "showlegend": i == 0,
                         "marker": {"color": METRIC_COLORS.get(m)}, "xaxis": xr, "yaxis": yr,
                         "hovertemplate": "%{x}: %{y:.3f}<extra>" + m + f" (total {g['logprob'].sum():.2f})</extra>"})
        layout_axes[xk] = {"domain": cells[i]["x"], "anchor": yr, "tickangle": -45, "tickfont": {"size": 10}}
        layout_axes[yk] = {"domain": cells[i]["y"], "anchor": xr, **({"matches": "y"} if i else {})}  # one scale
        if i % cols == 0:
            layout_axes[yk]["title"] = {"text": "log-prob"}
        notes.append(panel_title(esc(s if len(s) < 70 else s[:67] + "…"), cells[i]))
    full = esc(title) + (f"<br><sup>{esc(note)}</sup>" if note else "")
    layout = base_layout(full, 140 + 230 * rows, barmode="group", annotations=notes,
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
    table = check_frame(table, "table", ["sentence_idx", "metric", "pll"])
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
    tokens = check_frame(tokens, "tokens", ["sentence_idx", "metric", "position", "subword", "logprob", "char_end",
                                             "word", "n_subwords", "subword_idx"])
    gold = check_gold(gold, len(options))
    n = len(options)
    cols = 2 if n > 1 else 1
    rows = max(-(-n // cols), 1)
    cells = grid(n, cols, hgap=0.08, vgap=0.5 / rows, top=1.0)
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
        xk, yk, xr, yr = axis_keys(i)
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
        notes.append(panel_title(("★ " if i == gold else "") + option_label(option, limit=48), cells[i]))
    lines = wrap(note, 90)
    full = esc(title) + "".join(f"<br><sup>{esc(line)}</sup>" for line in lines)
    layout = base_layout(full, 170 + 210 * rows + 18 * len(lines), barmode="group", annotations=notes,
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
    tokens = check_frame(tokens, "tokens", ["sentence_idx", "metric", "word", "n_subwords", "subword",
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
