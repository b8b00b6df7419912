"""What the Workbench, the Explorer and the lesson share: background jobs (``runner``), the two anywidgets
(``plot``: plotly figures redrawn in place, and the probe that says whether a box is in sight; ``heatmap``: the token
heatmap) with their JavaScript and CSS, and the helpers for files and widget trees (``files``, ``layout``)."""
