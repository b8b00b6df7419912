"""What is wrong with a workbench's inputs, shown (a part of the ``Workbench``): the problems of the last check, one
line each, a notice in the warning colour; the status line while a problem holds the views; which views a problem
holds (``blocking``)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import ipywidgets as w

from .inputs import Inputs, Problem, problems
from .views import INFO_MARK

if TYPE_CHECKING:
    from .host import Host

#: The status line while a problem with the inputs blocks every view.
BLOCKED_STATUS = "<i>fix the inputs above to update the views</i>"


class Messages:
    """The problems of a ``Workbench``'s inputs: ``check`` finds and shows them, ``blocking`` says which hold a view.

    Attributes:
        line: the messages line (one line per problem).
        found: the problems of the last check, with the models that failed to load since (``add``).
    """

    def __init__(self, host: Host) -> None:
        self.host = host
        self.line = w.HTML("")
        self.line.add_class("sl-message")
        self.found: list[Problem] = []
        self._held_status = BLOCKED_STATUS  # the status line while a problem holds the views

    def check(self, inp: Inputs, *, keep_model_errors: bool = False) -> bool:
        """Find and show the problems of ``inp`` (on each edit too, so that a message goes as soon as its problem
        is fixed); True when one of them blocks every view. ``keep_model_errors``: keep showing a model that
        failed to load (the next update tries it again)."""
        host = self.host
        kept = [p for p in self.found if p.kind == "model"] if keep_model_errors else []
        new_rows = {i for i, r in enumerate(host.rows) if r.new}
        self.found = problems(inp, new_rows, host.policy.caps) + kept + host.examples.notes
        self.show(self.found)
        blocked = self.blocking(None)
        if blocked:
            waiting = self.waiting_for_new()
            host.status.value = self._held_status = (f"<i>{html.escape(blocked[0].text)}</i>" if waiting
                                                     else BLOCKED_STATUS)
        elif host.status.value == self._held_status:
            host.status.value = "<i>updating…</i>"
        return bool(blocked)

    def add(self, more: list[Problem]) -> None:
        """Show ``more`` (models that failed to load) with the problems found."""
        if more:
            self.found += more
            self.show(self.found)

    def waiting_for_new(self) -> bool:
        """True when only option rows just added (and not typed in yet) stop the update: the views keep showing
        the numbers for the other options, undimmed, until the new one is typed."""
        blocked = self.blocking(None)
        return bool(blocked) and all(p.kind == "new" for p in blocked)

    def blocking(self, scope: str | None) -> list[Problem]:
        """The blocking problems of the views (``scope`` None: of every view; otherwise of that view alone or of
        every view)."""
        return [p for p in self.found if p.blocking and p.scope in (None, scope)]

    def for_view(self, view: str) -> list[Problem]:
        """The notices of the last check that concern ``view``."""
        return [p for p in self.found if p.scope == view]

    def show(self, found: list[Problem]) -> None:
        """One line per problem; notices (non-blocking) in the warning colour."""
        shown = [p for p in found if (p.scope is None or p.blocking) and p.kind != "new"]
        if not shown:
            self.line.value = ""
            return
        serious = [p.blocking or p.kind == "model" for p in shown]
        items = "".join(f"<li class='sl-problem{'' if bad else ' sl-warning'}"
                        f"{' sl-model-error' if p.kind == 'model' else ''}'>"
                        f"{'⚠' if bad else INFO_MARK} {html.escape(p.text)}</li>" for p, bad in zip(shown, serious))
        self.line.value = f"<ul>{items}</ul>"
