"""Widgets: the ``Workbench`` (ipywidgets layout) and the ``TokenHeatmap`` anywidget.

>>> from surfacelab.widgets import Workbench   # doctest: +SKIP
>>> Workbench()                                 # doctest: +SKIP
"""

from .heatmap import TokenHeatmap, heatmap_rows
from .workbench import VIEWS, Inputs, View, Workbench

__all__ = ["Inputs", "TokenHeatmap", "VIEWS", "View", "Workbench", "heatmap_rows"]
