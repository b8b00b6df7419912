"""The Explorer: a dataset's runs side by side beside the Workbench (``widget``), made of parts: the template ablation
panel and the session and export files (``ablation``), and the opener that loads a row into the workbench
(``opening``, with ``prefetch`` and ``reveal``). ``surfacelab.widgets`` gives the ``Explorer``."""
