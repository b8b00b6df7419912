"""Widgets: the ``Workbench`` (ipywidgets layout), the ``Explorer`` (a dataset's runs beside it),
its views (``VIEWS``), two anywidgets (``TokenHeatmap``,
``PlotView``), and the background runs they share (``Runner``: cancellable, with progress; no ipywidgets).

>>> from surfacelab.widgets import Workbench   # doctest: +SKIP
>>> Workbench()                                 # doctest: +SKIP
"""

from .explorer import Explorer
from .heatmap import TokenHeatmap, heatmap_rows
from .inputs import Inputs, Problem, problems
from .lesson import lesson
from .plot import PlotView
from .scheduler import Run, Runner, ViewState
from .state import read_state
from .view import VIEWS, View, register_view
from .workbench import Workbench

__all__ = ["Explorer", "Inputs", "PlotView", "Problem", "Run", "Runner", "TokenHeatmap", "VIEWS", "View", "ViewState",
           "Workbench", "heatmap_rows", "lesson", "problems", "read_state", "register_view"]
