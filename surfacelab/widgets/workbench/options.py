"""The option rows of a workbench (a part of the ``Workbench``): each option with its paraphrases and gold marker,
"add option" and "add ␣ to every glued option"; replacing, adding, removing and moving rows (new widgets only where a
row is new: the browser draws fewer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import ipywidgets as w

from ..._checks import is_int
from ...text import glued
from ...viz import check_gold
from ..kit.layout import classed, close_tree
from .inputs import OptionRow, Problem, boxed

if TYPE_CHECKING:
    from .host import Host


class OptionList:
    """The options of a ``Workbench``: ``rows`` (in order), their box, and the buttons under them."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.rows: list[OptionRow] = []
        self.box = w.VBox([])
        self.add_button = w.Button(description="add option", icon="plus")
        self.fix_button = w.Button(description="add ␣ to every glued option",
                                   layout=w.Layout(display="none", width="auto"))
        classed([(self.box, "sl-options"), (self.add_button, "sl-add-option"), (self.fix_button, "sl-fix-spaces")])
        self.add_button.on_click(lambda _: self._add_clicked())
        self.fix_button.on_click(lambda _: self.fix_leading_spaces())

    @property
    def gold(self) -> int | None:
        """Index of the gold option, or None."""
        marked = [i for i, r in enumerate(self.rows) if r.gold.value]
        return marked[0] if marked else None

    @property
    def options(self) -> list[str]:
        """The option strings, in order (exactly as typed)."""
        return [r.option for r in self.rows]

    def set(self, options: list[str], paraphrases: list[str] | None = None, *, gold: int | None = None) -> None:
        """Replace every option (and their paraphrases, as "form, form" strings); mark ``gold`` (an index or None).
        More options than the policy's cap are refused before any row is made."""
        if isinstance(options, str) or not isinstance(options, (list, tuple)):
            raise TypeError("options: expected a list of strings")
        self.host.policy.caps.check_options(len(options))
        bad = [i for i, o in enumerate(options) if not isinstance(o, str)]
        if bad:
            raise TypeError(f"options: option {bad[0] + 1} is a {type(options[bad[0]]).__name__}, not a string")
        paraphrases = list(paraphrases) if paraphrases is not None else [""] * len(options)
        if len(paraphrases) != len(options):
            raise ValueError(f"paraphrases: expected {len(options)} entries, got {len(paraphrases)}")
        if any(not isinstance(p, str) for p in paraphrases):
            raise TypeError('paraphrases: expected one "form, form" string per option')
        gold = check_gold(gold, len(options))
        kept, dropped = self.rows[:len(options)], self.rows[len(options):]
        with self.host.holding():  # the rows there are take the new texts (new widgets cost the browser a redraw)
            for r, o, p in zip(kept, options, paraphrases):
                r.put(o, p)
            fresh = zip(options[len(kept):], paraphrases[len(kept):])
            self.rows = [*kept, *(OptionRow(self.host, o, p) for o, p in fresh)]
            for i, r in enumerate(self.rows):
                r.gold.value = i == gold
            if dropped or len(self.box.children) != len(self.rows):
                self.box.children = tuple(self.rows)
        for r in dropped:
            close_tree(r)
        self.host.edited()

    def add(self, text: str = "", paraphrases: str = "") -> None:
        """Append an option row (a ``ValueError`` once the policy's cap on options is reached)."""
        self.host.policy.caps.check_options(len(self.rows) + 1)
        with self.host.holding():
            row = OptionRow(self.host, text, paraphrases)
            row.new = not text
            self.rows.append(row)
            self.box.children = tuple(self.rows)
        self.host.edited()

    def _add_clicked(self) -> None:
        """The "add option" button: a new row, with the cursor in its text box (ready for typing)."""
        try:
            self.add()
        except ValueError as err:  # the cap on options (the button is disabled there: a click sent anyway)
            self.host.show_messages([Problem(str(err))])
            return
        self.rows[-1].text.focus()

    def remove(self, index: int) -> None:
        """Remove the option at ``index`` (0-based)."""
        if not is_int(index) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        row = self.rows.pop(index)
        self.box.children = tuple(self.rows)
        close_tree(row)
        self.host.edited()

    def move(self, index: int, delta: int) -> None:
        """Move the option at ``index`` by ``delta`` places (clamped to the list)."""
        if not is_int(index) or not 0 <= index < len(self.rows):
            raise ValueError(f"index: no option {index!r} (there are {len(self.rows)})")
        j = min(max(index + delta, 0), len(self.rows) - 1)
        self.rows.insert(j, self.rows.pop(index))
        self.box.children = tuple(self.rows)
        self.host.edited()

    def fix_leading_spaces(self) -> int:
        """Start every option that is glued to the premise with a space; returns how many were changed."""
        premise = self.host.premise_box.value
        bad = [r for r in self.rows if glued(premise, r.option)]
        with self.host.holding():
            for r in bad:
                r.text.value = boxed(" " + r.option)
        if bad:
            self.host.edited()
        return len(bad)

    def gold_toggled(self, row: OptionRow, on: bool) -> None:
        """A row's gold marker changed: turning one on turns the others off."""
        if on:
            with self.host.holding():
                for r in self.rows:
                    if r is not row:
                        r.gold.value = False
        self.host.edited()

    def refresh(self) -> None:
        """Each row's number and leading-space marker, the "add ␣" button and the cap on "add option"."""
        premise = self.host.read_premise()
        for i, r in enumerate(self.rows):
            r.refresh(i + 1, premise)
        n = sum(glued(premise, r.option) for r in self.rows)
        self.fix_button.description = f"add ␣ to the {n} glued option{'s' if n != 1 else ''}"
        self.fix_button.layout.display = None if n else "none"
        cap = self.host.policy.caps.options
        self.add_button.disabled = cap is not None and len(self.rows) >= cap
        self.add_button.tooltip = f"at most {cap} options here" if self.add_button.disabled else ""
