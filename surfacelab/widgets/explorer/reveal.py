"""``Reveal``: an anywidget that scrolls the workbench into view, in the browser, when a click in the explorer opens
an item, so that the workbench's views are in sight (for their sight probes) before the kernel computes them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anywidget
import traitlets

HERE = Path(__file__).parent


class Reveal(anywidget.AnyWidget):
    """Scrolls the workbench into view, in the browser, when a click in the explorer opens an item (a table row, an
    element with the ``sl-opens-item`` class), so that its views are in sight before the kernel computes them (see
    ``reveal.js``). ``missing``: set by the browser when the workbench never appeared on the page."""

    _esm = HERE / "reveal.js"
    target = traitlets.Unicode("").tag(sync=True)  # the CSS class of the workbench items open in
    wait_ms = traitlets.Int(3_000).tag(sync=True)  # how long the browser waits for that workbench to appear
    missing = traitlets.Bool(False).tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.layout.width = self.layout.height = "0px"
