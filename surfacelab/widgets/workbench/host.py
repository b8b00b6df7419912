"""``Host``: what a view, an option row and a part of the workbench (its model slots, example source, exporter and
lesson button) may read and call on the ``Workbench`` that holds them. Nothing else of the workbench is theirs to
touch: its update lanes and problems stay behind these members."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, ContextManager, Mapping, Protocol

if TYPE_CHECKING:
    import ipywidgets as w

    from ..app import AppPolicy
    from .examples import ExampleSource
    from .exporting import Exporter
    from .inputs import OptionRow, Problem
    from .models import ModelSlots
    from .options import OptionList
    from .status import StatusLine
    from .views.base import View


class Host(Protocol):
    """The workbench as its views, option rows and parts see it.

    Attributes:
        lm: the causal LM the views score with; mlm: the masked LM (the PLL view's).
        top_k: alternatives per token (the scorer, token and paraphrase views ask for as many).
        live: whether an edit updates the views by itself (otherwise Score / ``update()`` does).
        views: every view, by name (a view may read another's result: ``views["scores"].result_for``).
        rows: the option rows, in order; gold: the gold row's index (None: none).
        publishing: held while an update publishes a view's result and key: hold it to read the two together.
        policy: what a visitor of the app may do (``app.AppPolicy``; a view's export follows it).
        models, option_list, examples, exporter: the workbench's parts (a part may ask another: the examples load
            into the model pickers and the option rows, the exporter saves the examples' state, the lesson button
            writes beside the exporter's note; an option row moves and removes itself through ``option_list``).
        premise_box, domain_box: the premise and domain premise fields; chat_box: the "chat template" box, which turns
            ``chat_choice`` (what the workbench renders with) on and off; progress, status, message: the progress
            bar, the status line and the messages line (a model load reports in the first two).
        holding_edits: True while several fields change together (``holding``).
    """

    lm: Any
    mlm: Any
    top_k: int
    live: bool
    views: Mapping[str, View]
    rows: list[OptionRow]
    gold: int | None
    publishing: threading.Lock
    policy: AppPolicy
    models: ModelSlots
    option_list: OptionList
    examples: ExampleSource
    exporter: Exporter
    premise_box: w.Textarea
    domain_box: w.Text
    chat_box: w.Checkbox
    chat_choice: Any
    status_line: StatusLine
    status: w.HTML
    message: w.HTML
    holding_edits: bool

    def edited(self, delay: float | None = None) -> None:
        """An input changed (a box, a picker, a view's own choice): mark the views it outdates and update them
        (live: after the debounce, or ``delay`` seconds)."""

    def read_premise(self) -> str:
        """The premise as the causal LM reads it (rendered under the chat template; as typed if it does not
        render)."""

    def holding(self) -> ContextManager[None]:
        """Within the block, edits make no update (one follows the last)."""

    def set_options(self, options: list[str], paraphrases: list[str] | None = None, *,
                    gold: int | None = None) -> None:
        """Replace every option (and their paraphrases), mark ``gold``."""

    def score(self) -> None:
        """What the Score button does: models that failed to load are tried again, then the views update."""

    def catch_up(self) -> None:
        """Bring the views a live update left for later up to date (before reading or exporting them)."""

    def show_messages(self, found: list[Problem]) -> None:
        """Show ``found`` in the messages line (one line each)."""

    def figure_drawn(self, seconds: float, waited: float) -> None:
        """The browser drew one of a view's figures in ``seconds`` (after ``waited`` for plotly.js)."""

    def problems_for(self, view: str) -> list[Problem]:
        """The notices of the last update that concern ``view`` (a view shows them beside its reading)."""

