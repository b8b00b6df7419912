"""What every figure shares: colours, the plotly template, escaping, layout helpers, argument checks, ``save``."""

from __future__ import annotations

import html
import os
import threading
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from .._checks import is_int
from .._format import visible


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


def check_frame(frame: Any, name: str, columns: Sequence[str]) -> pd.DataFrame:
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


def option_label(option: str, *, limit: int | None = None) -> str:
    """An option as figures show it: leading space as ``␣``, escaped, cut to ``limit`` characters."""
    s = visible(option)
    if limit is not None and len(s) > limit:
        s = s[:limit - 1] + "…"
    return esc(s)


def plain(values: Any) -> list:
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


def base_layout(title: str, height: int, **extra: Any) -> dict:
    layout = {"title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 14}}, "height": height,
              "margin": {"l": 10, "r": 10, "t": 48, "b": 10}, "font": dict(FONT), "template": _template()}
    layout.update(extra)
    return layout


def figure(spec: dict) -> go.Figure:
    """A ``go.Figure`` from a ``*_spec`` dict (validated by plotly)."""
    if not isinstance(spec, dict) or "data" not in spec or "layout" not in spec:
        raise TypeError("spec: expected a dict with 'data' and 'layout' (a *_spec result)")
    return go.Figure(spec)


def grid(n: int, cols: int, *, hgap: float = 0.08, vgap: float = 0.12, top: float = 1.0) -> list[dict]:
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


def axis_keys(k: int) -> tuple[str, str, str, str]:
    """Layout keys and trace references of the k-th (0-based) pair of axes."""
    s = "" if k == 0 else str(k + 1)
    return f"xaxis{s}", f"yaxis{s}", f"x{s}", f"y{s}"


def wrap(text: str, width: int) -> list[str]:
    """``text`` broken into lines of at most about ``width`` characters at spaces ([] for "")."""
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def tick(text: str, width: int = 16, lines: int = 2) -> str:
    """A category label that fits under a bar: ``text`` wrapped to at most ``lines`` lines of about ``width``
    characters (``<br>``-joined, escaped), cut with "…" when longer (the full text is in the hover)."""
    wrapped = wrap(text, width) or [text]
    cut = [w if len(w) <= width else w[:width - 1] + "…" for w in wrapped[:lines]]
    if len(wrapped) > lines and not cut[-1].endswith("…"):
        cut[-1] = (cut[-1] if len(cut[-1]) < width else cut[-1][:width - 1]) + "…"
    return "<br>".join(esc(w) for w in cut)


def panel_title(text: str, domain: dict) -> dict:
    return {"text": text, "x": (domain["x"][0] + domain["x"][1]) / 2, "y": domain["y"][1], "xref": "paper",
            "yref": "paper", "xanchor": "center", "yanchor": "bottom", "showarrow": False,
            "font": {"size": 12}}


_RENDERER_LOCK = threading.Lock()


def _png_renderer() -> None:
    """Keep one kaleido renderer (a headless Chromium) for the process's PNGs: without it kaleido starts a browser
    for every image, 6-9 s each (``docs/benchmarks.md``). It closes when the process exits."""
    import kaleido
    from choreographer.browsers.chromium import Chromium

    browser = Chromium.find_browser(skip_local=False)  # $BROWSER_PATH as set, else PATH, typical places, a download
    if browser is None or not os.access(browser, os.X_OK):  # kaleido's renderer would wait for it forever
        where = f"$BROWSER_PATH={browser!r} is no program" if os.environ.get("BROWSER_PATH") else \
            "none was found on PATH or in kaleido's own download"
        raise RuntimeError(f"a PNG is drawn in a headless Chrome or Chromium (kaleido), and {where}: install one "
                           "(Debian: apt install chromium; or run kaleido_get_chrome); HTML needs none")
    options = {"plotlyjs": pio.defaults.plotlyjs, "mathjax": pio.defaults.mathjax, "headers": pio.defaults.headers}
    with _RENDERER_LOCK:  # opened with the options plotly gives each image: the renderer keeps them for all
        kaleido.start_sync_server(silence_warnings=True, **{k: v for k, v in options.items() if v})


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
        _png_renderer()
        with warnings.catch_warnings():  # plotly passes its options per image; the renderer was opened with them
            warnings.filterwarnings("ignore", "The kopts argument is ignored", UserWarning)
            fig.write_image(path, scale=scale)
    elif path.suffix == ".html":
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.write_html(path, include_plotlyjs=True)
    else:
        raise ValueError(f"path: expected a .png or .html file name, got {path.name!r}")
    return path
