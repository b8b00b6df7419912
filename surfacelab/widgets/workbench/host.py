"""``Bench``: what a view and an option row may read and call on the workbench that holds them (the ``Workbench``
implements it). Nothing else of the workbench is theirs to touch: its update lanes, problems and files stay
behind these members."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from ..app import AppPolicy
    from .inputs import OptionRow, Problem
    from .views.base import View


class Bench(Protocol):
    """The workbench as its views and option rows see it.

    Attributes:
        lm: the causal LM the views score with; mlm: the masked LM (the PLL view's).
        top_k: alternatives per token (the scorer, token and paraphrase views ask for as many).
        live: whether an edit updates the views by itself (otherwise Score / ``update()`` does).
        views: every view, by name (a view may read another's result: ``views["scores"].result_for``).
        rows: the option rows, in order.
        publishing: held while an update publishes a view's result and key: hold it to read the two together.
        policy: what a visitor of the app may do (``app.AppPolicy``; a view's export follows it).
    """

    lm: Any
    mlm: Any
    top_k: int
    live: bool
    views: Mapping[str, View]
    rows: list[OptionRow]
    publishing: threading.Lock
    policy: AppPolicy

    def edited(self, delay: float | None = None) -> None:
        """An input changed (a box, a picker, a view's own choice): mark the views it outdates and update them
        (live: after the debounce, or ``delay`` seconds)."""

    def problems_for(self, view: str) -> list[Problem]:
        """The notices of the last update that concern ``view`` (a view shows them beside its reading)."""

    def export_clicked(self, view: str, kind: str) -> None:
        """A view's export button: write ``view`` as ``kind`` ("png", "html", "csv"), the note beside the button."""

    def gold_toggled(self, row: OptionRow, on: bool) -> None:
        """A row's gold marker changed: at most one row is gold."""

    def move_option(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places."""

    def remove_option(self, index: int) -> None:
        """Remove the option at ``index``."""
