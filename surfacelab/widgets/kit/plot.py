"""``PlotView``: an anywidget that draws a plotly JSON figure and redraws it in place with ``Plotly.react``;
``SightProbe``: an anywidget that tells the kernel whether its view is in sight.

Why not ``go.FigureWidget``: every new FigureWidget (plotly 6+ is an anywidget) makes the browser
parse the 5 MB plotly bundle again, which costs about a second per figure and per update. A
``PlotView`` is created once per view; an update sets ``figure`` (a ``viz.*_spec`` dict) and the
browser calls ``Plotly.react`` on the same element (milliseconds). plotly.js itself is loaded once
per page: the first view asks the kernel for it with a custom message and keeps it on
``globalThis``.

The browser side also follows JupyterLab's theme (colours from the ``--jp-*`` CSS variables, redrawn
when the theme changes), sizes the figure to its container (and follows resizes), and draws a view
that is scrolled out of sight only when it comes into sight (``lazy``). After each draw the element
carries ``data-sl-revision`` = ``revision``, which tests read, and the browser tells the kernel how long the draw
took (``on_drawn``: the seconds drawing, and those spent first waiting for plotly.js).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import anywidget
import traitlets

HERE = Path(__file__).parent
_PLOTLY_JS: list[bytes] = []


def _plotly_js() -> bytes:
    """The plotly.js bundle that ships with the plotly package (read once)."""
    if not _PLOTLY_JS:
        from plotly.offline import get_plotlyjs

        _PLOTLY_JS.append(get_plotlyjs().encode("utf-8"))
    return _PLOTLY_JS[0]


class PlotView(anywidget.AnyWidget):
    """A plotly figure redrawn in place; set ``figure`` to a plotly JSON dict (``viz.*_spec``) to redraw."""

    _esm = HERE / "plot.js"
    figure = traitlets.Dict().tag(sync=True)
    revision = traitlets.Int(0).tag(sync=True)
    lazy = traitlets.Bool(True).tag(sync=True)

    def __init__(self, figure: dict | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("sl-plot")
        self._drawn: list[Callable[[float, float], None]] = []
        self.on_msg(self._on_message)
        if figure is not None:
            self.show(figure)

    def show(self, figure: dict) -> None:
        """Draw ``figure`` (plotly JSON with ``data`` and ``layout``) in place of the current one."""
        if not isinstance(figure, dict) or "data" not in figure or "layout" not in figure:
            raise TypeError("figure: expected a plotly JSON dict with 'data' and 'layout' (a viz.*_spec result)")
        with self.hold_sync():
            self.figure = figure
            self.revision += 1

    def clear(self) -> None:
        """Remove the figure (the element stays, empty)."""
        with self.hold_sync():
            self.figure = {}
            self.revision += 1

    def on_drawn(self, callback: Callable[[float, float], None]) -> None:
        """Call ``callback(seconds, waited)`` each time a browser has drawn the figure: the seconds the draw took and
        those it first waited for plotly.js (read once per page)."""
        self._drawn.append(callback)

    def _on_message(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        if content.get("kind") == "need-plotly":
            self.send({"kind": "plotly-js"}, buffers=[_plotly_js()])
        elif content.get("kind") == "drawn":
            seconds, waited = content.get("ms"), content.get("wait_ms")
            if all(isinstance(v, (int, float)) and 0 <= v < 3.6e6 for v in (seconds, waited)):
                for callback in self._drawn:
                    callback(seconds / 1000.0, waited / 1000.0)


class SightProbe(anywidget.AnyWidget):
    """``in_sight`` is True while the ``.sl-view`` the probe sits in is within 200 px of the visible page.

    True until a browser says otherwise: without a front end (scripts, tests, nbmake) every view counts
    as in sight.
    """

    _esm = HERE / "sight.js"
    in_sight = traitlets.Bool(True).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("sl-sight-probe")
        self.layout.width = "0px"
        self.layout.height = "0px"
