"""The Workbench: one multiple-choice item, every view side by side (``widget``), made of parts: its model slots
(``models``), its example source and saved states (``examples``, ``state``), its exporter (``exporting``) and the
lesson button (``lessons``); the inputs and their problems (``inputs``), the views (``views``), the update lanes
(``updates``) and ``host.Host``, all that a view, an option row or a part may ask of the workbench.

Nothing is imported here: ``surfacelab.widgets`` gives the ``Workbench``, and the lesson modules read the example and
state modules of this package without loading the widget.
"""
