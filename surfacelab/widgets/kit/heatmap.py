"""``TokenHeatmap``: a small anywidget that draws per-token log-probs and their DC-PMI contribution.

The ESM and CSS live beside this file (``heatmap.js``, ``heatmap.css``). Rows are sent columnar
(one list per field), tokens are plain spans with one delegated hover listener and a shared
tooltip (placed inside the viewport), so thousands of tokens render fast; ``max_tokens`` caps what
is drawn. A colour legend sits above the rows; leading spaces show as ``␣`` as everywhere else.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import numpy as np
import pandas as pd
import traitlets

from ..._format import visible

HERE = Path(__file__).parent
FIELDS = ["token", "token_id", "logprob", "rank", "entropy", "contribution", "alternatives"]


def _clean(values: list) -> list:
    """JSON-safe values: NaN and infinities to None, numpy integers to int."""
    return [None if isinstance(v, float) and not np.isfinite(v) else int(v) if isinstance(v, np.integer) else v
            for v in values]


def heatmap_rows(tokens: pd.DataFrame) -> list[dict]:
    """Rows for ``TokenHeatmap.rows`` from a ``token_view`` frame: per option a premise row, a domain
    row (if any) and a contribution row; each row holds one list per field of ``FIELDS``."""
    missing = [c for c in ["option", "condition", *FIELDS] if c not in tokens.columns]
    if missing:
        raise ValueError(f"tokens: missing column(s) {missing}")
    # one pass over the rows (per-group pandas indexing costs more than drawing them)
    groups: dict[tuple[str, str], list[tuple]] = {}
    for row in zip(*(tokens[c].tolist() for c in ["option", "condition", "position", *FIELDS])):
        groups.setdefault((row[0], row[1]), []).append(row[2:])
    rows = []
    for option in dict.fromkeys(tokens["option"].tolist()):
        for cond in ("premise", "domain"):
            g = sorted(groups.get((option, cond), []), key=lambda r: r[0])
            if not g:
                continue
            cols = {f: _clean([r[k + 1] for r in g]) for k, f in enumerate(FIELDS)}
            cols["alternatives"] = [[[str(t), float(lp)] for t, lp in a] for a in cols["alternatives"]]
            rows.append({"label": f"{visible(option)} · {cond}", "mode": "logprob", "value": cols["logprob"], **cols})
            if cond == "premise" and any(v is not None for v in cols["contribution"]):
                rows.append({"label": f"{visible(option)} · Δ (DC-PMI)", "mode": "contribution",
                             "value": cols["contribution"], **cols})
    return rows


class TokenHeatmap(anywidget.AnyWidget):
    """Per-token heatmap; set ``rows`` (see ``heatmap_rows``) to redraw."""

    _esm = HERE / "heatmap.js"
    _css = HERE / "heatmap.css"
    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    max_tokens = traitlets.Int(20000).tag(sync=True)
    #: False where the backend cannot compute entropy (a vLLM server): the tooltip says so instead of "n/a"
    has_entropy = traitlets.Bool(True).tag(sync=True)

    def __init__(self, tokens: pd.DataFrame | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class("sl-token-heatmap")
        if tokens is not None:
            self.rows = heatmap_rows(tokens)


def attribution_rows(result: Any) -> list[dict]:
    """Rows for ``TokenHeatmap.rows`` from a ``WhyResult``: its premise as written, each word coloured by its
    support for the gold (−``delta_lm`` of removing it; the text between words uncoloured), and on hover both
    margins (LM and DC-PMI, or PMI against the empty context without a domain premise) before and after the
    word is removed or replaced."""
    att = result.attribution
    words = att[att["unit"] == "word"]
    removed = words[words["method"] == "remove"].sort_values("start")
    replaced = {int(r.index): r for r in words[words["method"] == "replace"].itertuples()}
    pmi = "DC-PMI" if result.meta.get("prior") == "domain" else "PMI (empty context)"
    lm0, pm0 = result.term("LM gap", "gap"), result.term("premise evidence", "gap")
    neutral = result.meta.get("neutral", "")
    rival = "every other option" if result.meta.get("all_options") else repr(visible(result.options[result.against]))
    premise = result.premise
    token, value, tips, pos = [], [], [], 0

    def gap(upto: int) -> None:
        if upto > pos:
            token.append(premise[pos:upto])
            value.append(None)
            tips.append(None)

    for r in removed.itertuples():
        gap(int(r.start))
        lines = [f"word {int(r.index) + 1} of the premise",
                 f"removed: LM margin {lm0:+.2f} → {r.lm_margin:+.2f} ({r.delta_lm:+.2f}); "
                 f"{pmi} margin {pm0:+.2f} → {r.dcpmi_margin:+.2f} ({r.delta_dcpmi:+.2f})",
                 f"without it the gold {'wins' if r.gold_wins_lm else 'loses'} under LM and "
                 f"{'wins' if r.gold_wins_dcpmi else 'loses'} under {pmi} against {rival}"]
        rep = replaced.get(int(r.index))
        if rep is not None:
            lines.insert(2, f"replaced by {neutral!r}: LM margin → {rep.lm_margin:+.2f}; "
                            f"{pmi} margin → {rep.dcpmi_margin:+.2f}")
        token.append(premise[int(r.start):int(r.end)])
        value.append(_clean([-float(r.delta_lm)])[0])
        tips.append(lines)
        pos = int(r.end)
    gap(len(premise))
    label = f"premise: ★ {visible(result.options[result.gold])} vs {visible(result.options[result.against])}"
    return [{"label": label, "mode": "attribution", "plain": True, "token": token, "value": value, "tips": tips}]
