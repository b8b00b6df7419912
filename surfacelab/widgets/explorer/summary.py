"""The Explorer's summary (a part of the ``Explorer``): accuracy per scorer and run with 95% CIs beside who rescues
whom (a matrix of counts, each a filter) and the verdict labels of the first run (each a filter). Its buttons are
kept across redraws: a run redraws every few seconds, and new widgets would cost the browser a render each."""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Mapping

import ipywidgets as w
import pandas as pd
import plotly.graph_objects as go

from ... import explore, viz
from ...runs import EvalResult
from ..kit.layout import box, classed
from ..kit.plot import PlotView

if TYPE_CHECKING:
    from .widget import Explorer

#: Columns of the rescue matrix (the first ones of ``explore.columns``).
MATRIX_MAX = 8
#: Height of the accuracy figure in the widget (beside the rescue matrix; exports keep the figure's own).
PLOT_HEIGHT = 300
#: The verdict label of an item the LM got right (``why.rules``).
RIGHT = "right"


class Summary:
    """The summary of an ``Explorer``'s runs: the accuracy figure, the rescue matrix and the label buttons; a click
    on a count or a label sets the explorer's filters (``Explorer.filter``)."""

    def __init__(self, host: Explorer) -> None:
        self.host = host
        self.plot = PlotView(lazy=False)
        self.matrix = w.GridBox([])
        self.labels = w.HBox([])
        self._cells: dict[tuple[str, str], w.Button] = {}
        self._label_buttons: dict[str, w.Button] = {}
        classed([(self.plot, "sl-x-plot"), (self.matrix, "sl-x-matrix"), (self.labels, "sl-x-labels")])
        side = box([w.HTML("<b>who rescues whom</b> <span class='sl-hint'>(row right, column wrong; click a count "
                           "to list those items)</span>"), self.matrix,
                    w.HTML("<b>verdict labels</b> <span class='sl-hint'>(why the first run's LM missed, then the "
                           "items it got right; click to list)</span>"), self.labels], "sl-x-side", vertical=True)
        self.box = box([self.plot, side], "sl-x-summary")

    def refresh(self, runs: Mapping[str, EvalResult], cols: list[str]) -> None:
        """Redraw the figure, the matrix (of the first ``MATRIX_MAX`` columns) and the labels for ``runs``."""
        figure = json.loads(self.figure(runs).to_json())
        figure["layout"]["height"] = PLOT_HEIGHT
        self.plot.show(figure)
        self._build_matrix(runs, cols[:MATRIX_MAX])
        self._build_labels(runs)

    def figure(self, runs: Mapping[str, EvalResult]) -> go.Figure:
        """Accuracy per scorer and run with 95% CIs and the chance line."""
        frame = pd.concat([r.accuracy.assign(run=n) for n, r in runs.items()], ignore_index=True)
        first = next(iter(runs.values()))
        chance = float((1 / first.items["n_options"]).mean()) if len(first.items) else None
        return viz.accuracy_ci(frame, "run", chance=chance, title=f"{first.task}/{first.split}: accuracy with 95% CI")

    def _build_matrix(self, runs: Mapping[str, EvalResult], cols: list[str]) -> None:
        counts = explore.rescues(runs, cols)
        if set(self._cells) != {(a, b) for a in cols for b in cols if a != b}:
            self._cells = {}
            # a column's name may break after its run ("domain:" / "per_char ✗"): the matrix fits beside the figure
            cells: list[w.Widget] = [w.HTML("")] + [
                w.HTML(f"<small class='sl-x-col'>{html.escape(c).replace(':', ':<wbr>')} ✗</small>") for c in cols]
            for a in cols:
                cells.append(w.HTML(f"<small>{html.escape(a)} ✓</small>"))
                for b in cols:
                    if a == b:
                        cells.append(w.HTML("·"))
                        continue
                    button = w.Button(tooltip=f"list the items {a} gets right and {b} wrong")
                    button.on_click(lambda _, a=a, b=b: self.host.filter(right=[a], wrong=[b]))
                    self._cells[(a, b)] = button
                    cells.append(button)
            old, self.matrix.children = self.matrix.children, tuple(cells)
            for cell in old:
                cell.close()
            self.matrix.layout.grid_template_columns = f"max-content repeat({len(cols)}, minmax(4em, max-content))"
        for (a, b), button in self._cells.items():
            button.description = str(int(counts.loc[a, b]))
            button.disabled = not counts.loc[a, b]  # nothing to list

    def _build_labels(self, runs: Mapping[str, EvalResult]) -> None:
        """One button per verdict label with its count; a label's button is kept across redraws (a run redraws
        every few seconds: new widgets would cost the browser a render each)."""
        first = next(iter(runs.values()))
        counts = first.items["why"].astype(str).value_counts() if "why" in first.items else pd.Series(dtype=int)
        for label in [lb for lb in self._label_buttons if lb not in counts]:
            self._label_buttons.pop(label).close()
        order = [lb for lb in counts.index if lb != RIGHT] + [lb for lb in counts.index if lb == RIGHT]
        for label in order:
            if label not in self._label_buttons:
                self._label_buttons[label] = b = w.Button()
                b.on_click(lambda _, label=label: self.host.filter(label=label))
            # the items the LM got right are not a reason it missed: named as such, after the misses
            self._label_buttons[label].description = f"{'LM right' if label == RIGHT else label} ({counts[label]})"
        buttons = tuple(self._label_buttons[label] for label in order)
        if self.labels.children != buttons:
            self.labels.children = buttons
