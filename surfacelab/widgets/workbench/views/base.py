"""The Workbench's view machinery: the ``View`` base class and ``VIEWS``, the registry of view classes (display order).

A view owns its widgets, created once and updated in place (no widget is created per update, so nothing leaks
and nothing in the browser is rebuilt from scratch). Adding a view is local: subclass ``View``, set ``name``,
``title``, ``needs`` and ``order``, implement ``build`` (widgets), ``compute`` (library calls only: nothing here
computes a score) and ``show`` (frames and widgets from the result), then ``register_view(MyView)``. Every
``Workbench`` created afterwards shows it. A view reads the workbench only through ``host.Host``.

>>> class Echo(View):                                              # doctest: +SKIP
...     name, title, needs, order = "echo", "7 · Echo", ("premise",), 9
...     def build(self): self.out = w.HTML(); return [self.out]
...     def compute(self, inp): return inp.premise
...     def show(self, inp, result): self.frames = {}; self.out.value = html.escape(result)
>>> register_view(Echo)                                            # doctest: +SKIP
"""

from __future__ import annotations

import html
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from .... import viz
from ..exporting import export_row, save_view
from ....registry import Registry
from ...kit.layout import close_tree
from ...kit.plot import PlotView, SightProbe
from ..updates import ViewState

if TYPE_CHECKING:
    from ..host import Host
    from ..inputs import Inputs

#: CSS classes a view's box carries for its state (exactly one state at a time).
STATES = {ViewState.EMPTY: (), ViewState.READY: ("sl-view-ready",), ViewState.STALE: ("sl-stale",),
          ViewState.BUSY: ("sl-stale", "sl-busy"), ViewState.BLOCKED: ("sl-stale", "sl-blocked"),
          ViewState.DEFERRED: ("sl-stale", "sl-deferred"), ViewState.ERROR: ("sl-view-error",)}
_STATE_CLASSES = {c for cs in STATES.values() for c in cs}
#: The gold row's mark in the views' tables (a no-break space: the mark never ends a line without its option).
GOLD_MARK = "★\u00a0"
#: The mark of a note (a notice, not an error): drawn by CSS, since fonts such as Debian's have no "ⓘ".
INFO_MARK = "<span class='sl-info-mark' aria-label='note'>i</span>"


def html_table(header: list[str], rows: list[list[str]], *, win: list[list[bool]] | None = None,
               gold: int | None = None, cls: str = "sl-table") -> str:
    """An HTML table (cells already escaped): ``win[r][c]`` highlights a cell, row ``gold`` is starred."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = "".join(f"<td class='{'sl-win' if win and win[r][c] else ''}'>{v}</td>" for c, v in enumerate(row))
        body.append(f"<tr class='{'sl-gold-row' if r == gold else ''}'>{cells}</tr>")
    return f"<table class='{cls}'><tr>{head}</tr>{''.join(body)}</table>"


def plots(widget: w.Widget) -> list[PlotView]:
    """The ``PlotView``s in ``widget``'s tree."""
    if isinstance(widget, PlotView):
        return [widget]
    return [p for child in getattr(widget, "children", ()) for p in plots(child)]


class View:
    """One view of the Workbench: a box with a title, a state cue, content widgets, a reading and exports.

    Attributes:
        frames: the view's DataFrames from the last update (by name); ``main`` names the one exported as CSV.
        message: the error of the last update, or "".
        result: the library result of the last update (e.g. an ``MCResult``), or None.
        spec: the plotly JSON of the figure shown, or None (``figure`` builds a ``go.Figure`` from it).
        shown_for: the ``Inputs`` and the model (None: the view reads none) of the result shown, which exports name.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    #: ``Inputs`` fields (and "lm" / "mlm") the view depends on: the view recomputes when one changes.
    needs: ClassVar[tuple[str, ...]] = ("premise", "domain_premise", "options", "gold", "lm")
    main: ClassVar[str | None] = None
    #: compute order (lower first; a view may read the result of one computed before it).
    order: ClassVar[int] = 0
    #: a slow view is computed after the others are drawn, beside the next edits (off the keystroke path);
    #: its ``preview`` (if any) is shown at its place in the compute order meanwhile
    slow: ClassVar[bool] = False

    def __init__(self, workbench: "Host") -> None:
        self.workbench = workbench
        self.frames: dict[str, pd.DataFrame] = {}
        self.message = ""
        self.result: Any = None
        self.spec: dict | None = None
        self.shown_for: tuple[Inputs, Any] | None = None
        self.shown_key: tuple | None = None
        self.preview_key: tuple | None = None  # the key of the preview shown (a slow view's first, partial result)
        self.state = ViewState.EMPTY
        self._figure: go.Figure | None = None
        self._state_lock = threading.Lock()
        self.cue = w.HTML("<span class='sl-cue'>not computed yet</span>")
        self.cue.add_class("sl-view-cue")
        # a live update computes a view out of sight after those in sight: in the background once the typing
        # pauses, or at once when it comes into sight (``scheduler.Updates``)
        self.probe = SightProbe()
        head = w.HBox([w.HTML(f"<span class='sl-view-title'>{html.escape(self.title)}</span>"), self.cue,
                       self.probe])
        head.add_class("sl-view-head")
        self.error = w.HTML("")
        self.error.add_class("sl-view-message")
        self.error.layout.display = "none"
        self.content = w.VBox(self.build())
        self.content.add_class("sl-view-content")
        for plot in plots(self.content):  # the browser's drawing counts in the update's breakdown
            plot.on_drawn(workbench.figure_drawn)
        self.text = w.HTML("")
        self.text.add_class("sl-view-text")
        self.export_buttons, self.export_note, row = export_row(
            lambda kind: workbench.exporter.clicked(self.name, kind))
        self.box = w.VBox([head, self.error, self.content, self.text, row])
        self.box.add_class("sl-view")
        self.box.add_class(f"sl-view-{self.name}")

    # --- what a subclass implements ---------------------------------------------------------

    def build(self) -> list[w.Widget]:
        """Create the view's content widgets (once)."""
        raise NotImplementedError

    def compute(self, inp: "Inputs") -> Any:
        """Call the library for ``inp`` (runs on the update thread; no widget changes here)."""
        raise NotImplementedError

    def show(self, inp: "Inputs", result: Any) -> None:
        """Set ``frames`` (and ``spec``) from ``result`` and update the content widgets in place."""
        raise NotImplementedError

    def preview(self, inp: "Inputs") -> Any:
        """A slow view's quick first result for ``inp`` (library calls only; ``show`` draws it), shown while the
        full one computes; None: no preview (the default)."""
        return None

    # --- shared machinery -------------------------------------------------------------------

    def key(self, inp: "Inputs") -> tuple:
        """What the view's output depends on; the view is recomputed only when this changes."""
        models = {"lm": self.workbench.lm, "mlm": self.workbench.mlm}
        return tuple((n, models[n].fingerprint) if n in models else (n, getattr(inp, n)) for n in self.needs)

    @property
    def data(self) -> pd.DataFrame | None:
        """The view's main DataFrame (None before the first update or when unavailable)."""
        return self.frames.get(self.main) if self.main else None

    @property
    def figure(self) -> go.Figure | None:
        """The view's plotly figure (None when unavailable)."""
        if self._figure is None and self.frames:
            self._figure = self.make_figure()
        return self._figure

    def make_figure(self) -> go.Figure | None:
        """A ``go.Figure`` of what the view shows (default: from ``spec``)."""
        return viz.figure(self.spec) if self.spec is not None else None

    @property
    def in_sight(self) -> bool:
        """Whether the browser shows the view (its ``SightProbe``): a live update computes the views in sight first."""
        return self.probe.in_sight

    def publish(self, inp: "Inputs", result: Any, key: tuple) -> None:
        """Show ``result`` (for ``inp``, its key ``key``): frames, widgets, no error. An export's note goes when the
        numbers it was for are replaced."""
        if key != self.shown_key:
            self.export_note.value = ""
        self._figure = None
        self.result = result
        self.shown_for = (inp, next((getattr(self.workbench, m) for m in ("mlm", "lm") if m in self.needs), None))
        self.show(inp, result)
        self.message = ""
        self.error.value = ""
        self.error.layout.display = "none"
        self.content.layout.display = None

    def fail(self, message: str) -> None:
        """Show ``message`` instead of the content (the frames are dropped)."""
        self.frames, self.result, self.spec, self._figure, self.message = {}, None, None, None, message
        self.shown_key = None
        self.error.value = f"<div class='sl-error'>⚠ {html.escape(message)}</div>"
        self.error.layout.display = None
        self.content.layout.display = "none"
        self.text.value = ""
        self.set_state(ViewState.ERROR)

    def set_state(self, state: ViewState, note: str | None = None) -> None:
        """Mark the view with ``state``: its CSS classes and its visible cue (``note``: instead of the usual one)."""
        stale = "updating…" if self.workbench.live else "inputs changed: press Score"
        cues = {ViewState.READY: "", ViewState.STALE: stale,
                ViewState.BUSY: "computing…", ViewState.BLOCKED: "waiting for valid inputs", ViewState.ERROR: "",
                ViewState.EMPTY: "", ViewState.DEFERRED: "updates after the views in sight"}
        with self._state_lock:
            self.state = state
            classes = [c for c in self.box._dom_classes if c not in _STATE_CLASSES]
            self.box._dom_classes = classes + list(STATES[state])
            cue = cues[state] if note is None else note
            self.cue.value = f"<span class='sl-cue'>{html.escape(cue)}</span>" if cue else ""

    def export_parts(self) -> tuple[list[dict], list[tuple[str, str]]]:
        """What a PNG / HTML export draws: the view's figures as plotly JSON (one under the other) and the header
        fields, as (label, plain text), beyond its inputs and model. Default: its figure alone, no more fields."""
        return ([] if self.figure is None else [self.figure.to_plotly_json()]), []

    def save(self, path: str | Path) -> Path:
        """Export the figures under the header of what they show (``.png``/``.html``; in the app an HTML page holds
        plotly.js itself: it is downloaded alone) or the main frame (``.csv``)."""
        return save_view(self, Path(path), standalone=self.workbench.policy.app)

    def forget(self) -> None:
        """Drop what belongs to the previous example (a new one was loaded): the export message, and in views
        that have one, the choice made for it."""
        self.export_note.value = ""

    def close(self) -> None:
        """Close every widget of the view."""
        close_tree(self.box)


#: The view classes by name, in display order (``register_view``).
VIEWS: Registry[type[View]] = Registry("view", "cls")


def register_view(cls: type[View], *, overwrite: bool = False) -> type[View]:
    """Add a view class to ``VIEWS`` (shown by every Workbench created afterwards, in registration order); a taken
    name raises ``ValueError`` unless ``overwrite``."""
    if not (isinstance(cls, type) and issubclass(cls, View)) or not cls.name:
        raise TypeError("cls: expected a View subclass with a name")
    return VIEWS.register(cls.name, cls, overwrite=overwrite)


