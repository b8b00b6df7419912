"""The Explorer: a dataset's runs side by side beside the Workbench (``widget``), made of parts: the template ablation
panel (``ablation``), the session and export files (``files``) and the opener that loads a row into the workbench
(``opening``, with ``prefetch`` and ``reveal``)."""

from .widget import Explorer

__all__ = ["Explorer"]
