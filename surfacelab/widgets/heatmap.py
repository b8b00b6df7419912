"""``TokenHeatmap``: a small anywidget that draws per-token log-probs and their DC-PMI contribution.

The ESM and CSS live beside this file (``heatmap.js``, ``heatmap.css``). Rows are sent columnar
(one list per field), tokens are plain spans with one delegated hover listener and a shared
tooltip (placed inside the viewport), so thousands of tokens render fast; ``max_tokens`` caps what
is drawn. A colour legend sits above the rows; leading spaces show as ``␣`` as everywhere else.
"""

from __future__ import annotations

from pathlib import Path

import anywidget
import numpy as np
import pandas as pd
import traitlets

from .._format import visible

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
