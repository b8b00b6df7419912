"""Option-ID figures: observed, prior, calibrated and debiased distributions, and their reading."""

from __future__ import annotations


import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .._format import distinct, visible
from .base import LETTER_COLORS, LETTER_NAMES, check_frame, check_gold, esc, figure, base_layout, option_label, plain

def letter_priors_spec(table: pd.DataFrame, *, gold: int | None = None,
                       title: str = "Option-letter probabilities") -> dict:
    """Plotly JSON of ``letter_priors`` (see there)."""
    table = check_frame(table, "table", ["id"])
    series = [c for c in LETTER_COLORS if c in table.columns]
    if not series:
        raise ValueError(f"table: needs at least one of the columns {list(LETTER_COLORS)}")
    gold = check_gold(gold, len(table))
    ids = [("★ " if k == gold else "") + esc(i) for k, i in enumerate(table["id"])]
    if "option" in table.columns:
        ids = [f"{i} · {option_label(o, limit=18)}" for i, o in zip(ids, table["option"])]
    data = [{"type": "bar", "x": ids, "y": plain(table[c]), "name": LETTER_NAMES[c],
             "marker": {"color": LETTER_COLORS[c]},
             "hovertemplate": "%{x}: %{y:.1%}<extra>" + LETTER_NAMES[c] + "</extra>"} for c in series]
    layout = base_layout(esc(title), 340, barmode="group", legend={"orientation": "h", "y": -0.18},
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
    table = check_frame(table, "table", ["id", "option", "observed", "prior", "calibrated", "debiased"])
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
