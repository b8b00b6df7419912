"""Widgets: the ``Workbench`` (ipywidgets layout), the ``Explorer`` (a dataset's runs beside it),
its views (``VIEWS``), two anywidgets (``TokenHeatmap``,
``PlotView``), and the background runs they share (``Runner``: cancellable, with progress; no ipywidgets).

>>> from surfacelab.widgets import Workbench   # doctest: +SKIP
>>> Workbench()                                 # doctest: +SKIP
"""

from .explorer.widget import Explorer
from .kit.heatmap import TokenHeatmap, heatmap_rows
from .workbench.inputs import Inputs, Problem, problems
from .lesson.make import lesson
from .kit.plot import PlotView
from .kit.runner import Job, Runner
from .workbench.updates import ViewState
from .workbench.state import read_state
from .workbench.views.base import VIEWS, View, register_view
from .workbench.widget import Workbench

__all__ = ["Explorer", "Inputs", "Job", "PlotView", "Problem", "Runner", "TokenHeatmap", "VIEWS", "View", "ViewState",
           "Workbench", "heatmap_rows", "lesson", "problems", "read_state", "register_view"]
