"""The surface-form mass figure and its reading."""

from __future__ import annotations


import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .._format import visible
from ..mass_rules import named_winners, winner_sentences
from .base import PALETTE, check_frame, esc, figure, base_layout, option_label, panel_title, plain, tick

def paraphrase_mass_spec(forms: pd.DataFrame, concepts: pd.DataFrame, winners: pd.DataFrame, *,
                         answer: str | None = None, title: str = "Paraphrase mass") -> dict:
    """Plotly JSON of ``paraphrase_mass`` (see there)."""
    forms = check_frame(forms, "forms", ["concept", "form", "prob", "share_of_listed", "share_of_concept"])
    concepts = check_frame(concepts, "concepts", ["concept", "share", "domain_share", "dcpmi"])
    winners = check_frame(winners, "winners", ["scorer", "concept", "form"])
    names = {c: (f"★ {esc(c)}" if c == answer else esc(c)) for c in concepts["concept"]}
    # long options (ARC, MMLU) get short wrapped tick labels, numbered, and the narrow totals panel their numbers
    # alone; the bars keep the full names (hover, data)
    star = ["★ " if c == answer else "" for c in names]
    numbered = len(names) > 4 or any(len(str(c)) > 8 for c in names)
    axis = {"tickmode": "array", "tickvals": list(names.values()), "tickangle": 0, "automargin": True}
    left_ticks = [tick(f"{s}{i + 1} · {c}" if numbered else f"{s}{c}") for i, (s, c) in enumerate(zip(star, names))]
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
                     "name": option_label(form), "text": [option_label(form) if len(visible(form)) <= 14 else ""],
                     "textposition": "inside", "textangle": 0,
                     "marker": {"color": PALETTE[j % len(PALETTE)]}, "showlegend": False,
                     "xaxis": "x", "yaxis": "y",
                     "hovertemplate": f"{option_label(form)}<br>P(form|premise) = {prob:.3g}<br>"
                                      f"{share:.1%} of its concept · {listed:.1%} of all "
                                      f"listed forms{dcpmi}<extra>{esc(concept)}</extra>"})
    x = [names[c] for c in concepts["concept"]]
    totals = [("premise", "share", "#4c78a8")]
    if concepts["domain_share"].notna().any():
        totals.append(("domain premise", "domain_share", "#bab0ac"))
    for name, col, color in totals:
        data.append({"type": "bar", "x": x, "y": plain(concepts[col]), "name": name, "offsetgroup": name,
                     "marker": {"color": color}, "xaxis": "x2", "yaxis": "y2", "showlegend": False,
                     "hovertemplate": "%{x}: %{y:.1%} of the listed mass<extra>" + name + "</extra>"})
    # the key of the totals' colours sits in their panel title (a legend under the bars met the tick labels)
    key = " ".join(f"<span style='color:{color}'>■</span> {name}" for name, _, color in totals)
    # a rule that picks a form names the form and its concept, one rule a line (two a line ran past a 560 px view);
    # what form DC-PMI is, is said in each form's hover and in the reading under the figure
    won = named_winners(winners, lambda s: f"<b>{option_label(s, limit=30)}</b>")
    lines = "<br>".join(won)
    layout = base_layout(f"{esc(title)}<br><sup>winners — {lines}</sup>", 330 + 20 * len(won), barmode="stack",
                     margin={"l": 10, "r": 10, "t": 70 + 20 * len(won), "b": 10},
                     uniformtext={"minsize": 9, "mode": "hide"},
                     xaxis={"domain": left["x"], "anchor": "y", "ticktext": left_ticks, **axis},
                     yaxis={"domain": left["y"], "anchor": "x", "tickformat": ".0%", "range": [0, 1]},
                     xaxis2={"domain": right["x"], "anchor": "y2", "ticktext": right_ticks, **axis},
                     yaxis2={"domain": right["y"], "anchor": "x2", "tickformat": ".0%", "range": [0, 1]},
                     annotations=[panel_title("share of listed mass, by surface form", left),
                                  panel_title(f"concept totals<br>{key}", right)])
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
    concepts = check_frame(concepts, "concepts", ["concept", "share", "n_forms", "best_form_logprob",
                                                   "best_form_share"])
    winners = check_frame(winners, "winners", ["scorer", "concept", "form"])
    return " ".join(winner_sentences(concepts, winners, answer, quote=lambda s: repr(visible(s))))
