"""The Workbench: one multiple-choice item, every view side by side (``widget``), made of parts: its model slots
(``models``), its example source and saved states (``examples``, ``state``), its exporter (``exporting``) and the
lesson button (``lesson``); the inputs and their problems (``inputs``), the views (``views``), the update lanes
(``updates``) and ``Host``, all that a view, an option row or a part may ask of the workbench (``host``)."""

from .widget import Workbench

__all__ = ["Workbench"]
