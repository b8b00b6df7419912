"""Widgets: the ``Workbench`` (ipywidgets layout), its views, and two anywidgets (``TokenHeatmap``, ``PlotView``).

>>> from surfacelab.widgets import Workbench   # doctest: +SKIP
>>> Workbench()                                 # doctest: +SKIP
"""

from .heatmap import TokenHeatmap, heatmap_rows
from .plot import PlotView
from .views import VIEWS, View, register_view
from .workbench import Inputs, Problem, Workbench, problems, read_state

__all__ = ["Inputs", "PlotView", "Problem", "TokenHeatmap", "VIEWS", "View", "Workbench", "heatmap_rows",
           "problems", "read_state", "register_view"]
