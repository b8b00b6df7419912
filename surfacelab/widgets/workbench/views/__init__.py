"""The Workbench's views: ``VIEWS``, the registry of view classes (display order), the ``View`` base class
(``base``), and the six views, one module each, registered here in display order."""

from .base import GOLD_MARK, INFO_MARK, VIEWS, View, html_table, register_view
from .letters import LettersView
from .paraphrase import ParaphraseView
from .pll import PLLView
from .scores import ScoresView
from .tokens import TokensView
from .why import WhyView

for _view in (ScoresView, TokensView, ParaphraseView, LettersView, PLLView, WhyView):
    register_view(_view)

__all__ = ["GOLD_MARK", "INFO_MARK", "VIEWS", "View", "html_table", "register_view"]
