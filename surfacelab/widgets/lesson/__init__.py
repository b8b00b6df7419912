"""Lessons: one HTML page that opens offline with every workbench view of its items. ``make`` (``sl.lesson``), the
items and their views (``build``), the page (``page``) and notebook 02's text (``text``). The workbench's "export
lesson" button is ``workbench.lesson``; nothing here imports the workbench but ``make``."""
