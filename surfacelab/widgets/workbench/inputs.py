"""The Workbench's inputs: the ``Inputs`` snapshot, the problems found in it (messages for people), the
option rows (text, paraphrases, gold, the leading-space marker and fix) and how an option joins the premise."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Collection

import ipywidgets as w

from ... import chat
from ..._format import visible
from ...text import bad_character, blank, duplicates, glued
from ..app import Caps

if TYPE_CHECKING:
    from .host import Host


@dataclass(frozen=True)
class Inputs:
    """A snapshot of the editable state (paraphrases as the forms scored: each with its option's leading space;
    ``chat_template``: as ``score``'s, None for plain text)."""

    premise: str
    domain_premise: str | None
    options: tuple[str, ...]
    paraphrases: tuple[tuple[str, ...], ...]
    gold: int | None
    chat_template: Any = None


#: characters of a rendered context's end shown in the chat line (the whole behind a click)
CHAT_TAIL = 40


def read_contexts(lm: Any, inp: Inputs) -> tuple[str, str | None]:
    """The premise and the domain premise as ``lm`` reads them: rendered through ``inp.chat_template``
    (``chat.contexts``), or as typed. A template that does not render is a ``ValueError`` naming ``chat_template``."""
    return chat.contexts(lm, chat.resolve(lm, inp.chat_template), inp.premise, inp.domain_premise)


def reads(lm: Any, inp: Inputs) -> tuple[str, str]:
    """The premise as ``lm`` reads it (as typed when the chat template does not render) and the chat line's HTML."""
    try:
        premise = read_contexts(lm, inp)[0]
    except (ValueError, TypeError):  # the template's error is the chat line's (and the views')
        premise = inp.premise
    return premise, chat_preview(lm, inp)


def chat_preview(lm: Any, inp: Inputs) -> str:
    """HTML: under a chat template, the strings the model reads (the rendered premise and domain premise, escaped,
    the whole of each behind a click); "" without one; the template's error when it does not render."""
    if inp.chat_template is None:
        return ""
    try:
        premise, domain = read_contexts(lm, inp)
    except (ValueError, TypeError) as err:
        return f"<div class='sl-chat-line sl-chat-error'>{html.escape(str(err))}</div>"
    sha = chat.resolve(lm, inp.chat_template).sha[:12]
    parts = [("premise", premise)] + ([("domain premise", domain)] if domain is not None else [])
    shown = " · ".join(f"{name} <code>…{html.escape(visible(text[-CHAT_TAIL:]))}</code>" for name, text in parts)
    whole = "".join(f"<div>{name}:</div><pre>{html.escape(text)}</pre>" for name, text in parts)
    return (f"<div class='sl-chat-line'><details><summary>reads as chat turns (template sha256 {sha}): {shown}"
            f"</summary>{whole}</details></div>")


@dataclass(frozen=True)
class Problem:
    """Something wrong with the inputs, in words for people.

    ``scope``: the view it concerns (None: every view); ``blocking``: the views in scope wait until it is
    fixed (otherwise it is a notice); ``kind``: a short tag (``"glued"`` for a missing leading space, ``"new"``
    for an option row just added and not typed in yet: the views wait for it without a warning).
    """

    text: str
    scope: str | None = None
    blocking: bool = True
    kind: str = ""


def split_forms(value: str, lead: str = " ") -> tuple[str, ...]:
    """Paraphrases typed as "form, form | form": each stripped form gets ``lead`` (its option's leading space)."""
    parts = [p.strip() for p in value.replace("|", ",").split(",")]
    return tuple(lead + p for p in parts if p)


#: An option's box is a one-line ``<input>``, which drops line breaks when the browser sets its value (an SST-2
#: option ``" negative\n"`` would lose its ``"\n"`` at the first keystroke): the box shows each as a mark and
#: reads the mark back as the line break. ``_format.visible`` draws them with the same marks.
BOX_MARKS = {"\n": "\u21b5", "\r": "\u240d"}
#: The paraphrase box's placeholder while it holds nothing of an earlier option.
PARAPHRASE_PLACEHOLDER = "paraphrases (optional), comma-separated"


def boxed(text: str) -> str:
    """``text`` as an option's box shows it: each line break as its mark (``BOX_MARKS``)."""
    for char, mark in BOX_MARKS.items():
        text = text.replace(char, mark)
    return text


def unboxed(value: str) -> str:
    """The option an option's box holds: each mark of ``BOX_MARKS`` read back as its line break."""
    for char, mark in BOX_MARKS.items():
        value = value.replace(mark, char)
    return value


def leading(text: str) -> str:
    """The leading whitespace of ``text``."""
    return text[:len(text) - len(text.lstrip())]


def _quote(text: str) -> str:
    return repr(visible(text))


def problems(inp: Inputs, new: Collection[int] = (), caps: Caps = Caps()) -> list[Problem]:
    """Every problem with ``inp``, one message per problem, options numbered from 1 and quoted; ``new``: the
    indices of option rows just added and not typed in yet (an empty one there is not a mistake yet). Inputs over one
    of ``caps`` are refused first and alone: nothing else reads them."""
    too_large = caps.text_problems(inp.premise, inp.domain_premise, inp.options, inp.paraphrases)
    if too_large:
        return [Problem(text, scope=scope, kind="size") for text, scope in too_large]
    out: list[Problem] = []
    if not inp.premise.strip():
        out.append(Problem("The premise is empty: type the text the options continue (an empty premise would "
                           "score the options from the start of text, which this workbench does not do)."))
    n = len(inp.options)
    if n < 2:
        out.append(Problem(f"Add at least two options to compare (there {'is one' if n == 1 else 'are none'}): "
                           "a winner and a margin need two."))
    for i, o in enumerate(inp.options):
        if not o and i in new:
            out.append(Problem(f"type option {i + 1} (or remove it with ✕): the views wait for it", kind="new"))
        elif blank(o):
            what = ("empty" if not o else "only whitespace" if not o.strip() else
                    f"only whitespace and invisible characters, {_quote(o)}")
            out.append(Problem(f"Option {i + 1} is {what}: type an answer or remove it with ✕."))
        elif bad := bad_character(o):  # one message, counted within the option, before any view reads it its own way
            out.append(Problem(f"Option {i + 1}, {_quote(o)}: {bad}: retype it."))
    for j, i in duplicates(inp.options):
        o = inp.options[i]
        if blank(o):
            continue
        if inp.options[j] == o:
            out.append(Problem(f"Options {j + 1} and {i + 1} are the same text, {_quote(o)}: change or remove one."))
        else:
            out.append(Problem(f"Options {j + 1} and {i + 1} are the same text written with different Unicode code "
                               f"points ({ascii(inp.options[j])} and {ascii(o)}): remove one."))
    bare: dict[str, int] = {}
    for i, o in enumerate(inp.options):
        b = o.strip()
        if b and b in bare and inp.options[bare[b]] != o:
            out.append(Problem(f"Options {bare[b] + 1} and {i + 1} differ only in whitespace "
                               f"({_quote(inp.options[bare[b]])} "
                               f"and {_quote(o)}): as lettered lines they read the same.", scope="letters"))
        bare.setdefault(b, i)
    if inp.premise.strip() and inp.chat_template is None:  # a chat turn ends with the template's generation prompt
        for i, o in enumerate(inp.options):
            if glued(inp.premise, o):
                tail = inp.premise.rstrip()[-12:]
                out.append(Problem(f"Option {i + 1}, {_quote(o)}, does not start with a space, so the model reads it "
                                   f"glued to the premise: '…{tail}{o}'. Add ␣ if it is a new word.",
                                   blocking=False, kind="glued"))
    owner: dict[str, int] = {o: i for i, o in enumerate(inp.options) if o.strip()}
    for i, forms in enumerate(inp.paraphrases):
        for f in dict.fromkeys(forms):
            j = owner.get(f)
            if j is None:
                owner[f] = i
            elif j != i:
                kind = "is option" if inp.options[j] == f else "is also a paraphrase of option"
                out.append(Problem(f"Paraphrase {_quote(f)} of option {i + 1} {kind} {j + 1}: a form can belong "
                                   "to one option only, so the paraphrase view waits until one is removed.",
                                   scope="paraphrase"))
            elif f == inp.options[i]:
                out.append(Problem(f"Paraphrase {_quote(f)} of option {i + 1} repeats the option; it is counted once.",
                                   scope="paraphrase", blocking=False))
        repeated = sorted({f for f in forms if forms.count(f) > 1})
        for f in repeated:
            out.append(Problem(f"Paraphrase {_quote(f)} is listed twice for option {i + 1}; it is counted once.",
                               scope="paraphrase", blocking=False))
    return out


#: Characters of an option (and of each paraphrase) and paraphrases per option that a row's preview shows: it says
#: how the option joins the premise, which its start shows (the views show the option whole).
PREVIEW_CHARS, PREVIEW_FORMS = 120, 12
#: Spaces of the join drawn one ␣ each; more are drawn as ␣×n.
PREVIEW_SPACES = 8


def _cut(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else f"{text[:PREVIEW_CHARS]}… ({len(text):,} characters)"


def join_preview(premise: str, option: str, forms: tuple[str, ...]) -> str:
    """HTML: how the option joins the premise (the join's whitespace marked) and the paraphrase forms scored (each
    cut to ``PREVIEW_CHARS``, the first ``PREVIEW_FORMS`` of them)."""
    if not option:
        return "<span class='sl-join'>empty option</span>"
    tail = premise[-18:].lstrip() if premise else ""
    dots = "…" if len(premise) > 18 else ""
    space = premise[-1:].isspace() or option[:1].isspace()
    if not premise.strip():
        marker = "<span class='sl-space-marker sl-space-yes'>␣</span>" if option[:1].isspace() else ""
        read = f"<code>{html.escape(_cut(visible(option)))}</code>"
    elif space:
        n = max(len(leading(option)) + len(premise) - len(premise.rstrip()), 1)
        marker = ("<span class='sl-space-marker sl-space-yes' title='starts a new word after the premise'>"
                  f"{'␣' * n if n <= PREVIEW_SPACES else f'␣×{n:,}'}</span>")
        read = (f"<code>{html.escape(dots + tail.rstrip())}</code>{marker}"
                f"<code>{html.escape(_cut(visible(option.lstrip())))}</code>")
    else:
        marker = ("<span class='sl-space-marker sl-space-no' title='no space: glued to the last word of the "
                  "premise'>no ␣</span>")
        read = (f"<code>{html.escape(dots + tail)}</code><span class='sl-space-marker sl-space-no'>‸</span>"
                f"<code>{html.escape(_cut(visible(option)))}</code>")
    out = f"<span class='sl-join'>reads {read}"
    if forms:
        out += " · paraphrases: " + ", ".join(f"<code>{html.escape(_cut(visible(f)))}</code>"
                                              for f in forms[:PREVIEW_FORMS])
        out += f" and {len(forms) - PREVIEW_FORMS:,} more" if len(forms) > PREVIEW_FORMS else ""
    return out + "</span>"


class OptionRow(w.HBox):
    """One option: number, gold toggle, text, paraphrases, move up/down, remove, and how it joins the premise
    (the ␣ marker, with an "add ␣" button when the option is glued to the premise's last word)."""

    def __init__(self, workbench: "Host", text: str = "", paraphrases: str = "") -> None:
        self.number = w.HTML("")
        self.number.add_class("sl-option-number")
        self.gold = w.ToggleButton(value=False, description="★", tooltip="gold answer")
        self.text = w.Text(value=boxed(text), placeholder="option, e.g. ␣bathtub (start with a space)",
                           tooltip="↵ in the box is a line break of the option")
        self.paraphrases = w.Text(value=paraphrases, placeholder=PARAPHRASE_PLACEHOLDER)
        self.up = w.Button(icon="arrow-up", tooltip="move up")
        self.down = w.Button(icon="arrow-down", tooltip="move down")
        self.remove = w.Button(icon="times", tooltip="remove")
        self.join = w.HTML("")
        self.fix = w.Button(description="add ␣", tooltip="start the option with a space so it is a new word")
        for widget, cls in [(self.gold, "sl-gold"), (self.text, "sl-option"), (self.paraphrases, "sl-paraphrases"),
                            (self.up, "sl-option-up"), (self.down, "sl-option-down"),
                            (self.remove, "sl-option-remove"), (self.join, "sl-option-preview"),
                            (self.fix, "sl-space-fix")]:
            widget.add_class(cls)
        # the preview and its fix share one box, so the fix button appearing never narrows the text boxes
        tail = w.HBox([self.join, self.fix])
        tail.add_class("sl-option-tail")
        super().__init__([self.number, self.gold, self.text, self.paraphrases, self.up, self.down, self.remove, tail])
        self.add_class("sl-option-row")
        self.up.on_click(lambda _: workbench.option_list.move(workbench.rows.index(self), -1))
        self.down.on_click(lambda _: workbench.option_list.move(workbench.rows.index(self), +1))
        self.remove.on_click(lambda _: workbench.option_list.remove(workbench.rows.index(self)))
        self.fix.on_click(lambda _: setattr(self.text, "value", boxed(" " + self.option.lstrip())))
        self.gold.observe(lambda ch: setattr(self.gold, "button_style", "warning" if ch["new"] else ""), "value")
        self.gold.observe(lambda ch: workbench.option_list.gold_toggled(self, ch["new"]), "value")
        self.new = False  # added by "add option" and not typed in yet (see ``problems``)
        # the paraphrases belong to the option they were written for (``origin``); those cleared when the option's
        # word was replaced wait in ``parked`` until that option is typed back
        self.origin, self.parked, self._ours = self.option, "", False
        self.text.observe(self._typed, "value")
        self.text.observe(lambda _: workbench.edited(), "value")
        self.paraphrases.observe(self._paraphrased, "value")
        self.paraphrases.observe(lambda _: workbench.edited(), "value")

    def put(self, text: str, paraphrases: str) -> None:
        """Set the option and its paraphrases together (an example, a saved state): the paraphrases are this
        option's."""
        self.text.value, self.paraphrases.value = boxed(text), paraphrases
        self.origin, self.parked, self.new = text, "", False
        self.paraphrases.placeholder = PARAPHRASE_PLACEHOLDER

    def _typed(self, _change: object) -> None:
        self.new = False
        now, was = self.option.strip(), self.origin.strip()
        if self.paraphrases.value and was and (not now or now[0].lower() != was[0].lower()):
            # the option's word was replaced (" sink" -> " pool"): its paraphrases no longer fit
            self.parked = self.paraphrases.value
            self._own(lambda: setattr(self.paraphrases, "value", ""))
            self.paraphrases.placeholder = f"cleared (were for {was}: {self.parked})"
        elif self.parked and not self.paraphrases.value and self.option == self.origin:  # typed back (or undone)
            self._own(lambda: setattr(self.paraphrases, "value", self.parked))
            self.parked, self.paraphrases.placeholder = "", PARAPHRASE_PLACEHOLDER

    def _own(self, change: Callable[[], None]) -> None:
        """Make ``change`` to the paraphrases as the row's own (not the person's typing)."""
        self._ours = True
        try:
            change()
        finally:
            self._ours = False

    def _paraphrased(self, _change: object) -> None:
        if not self._ours:  # typed: these are the current option's paraphrases
            self.origin, self.parked = self.option, ""
            self.paraphrases.placeholder = PARAPHRASE_PLACEHOLDER

    @property
    def option(self) -> str:
        """The option as scored: the box's text with its line-break marks read back (``unboxed``)."""
        return unboxed(self.text.value)

    def forms(self) -> tuple[str, ...]:
        """The paraphrase forms as scored: each with this option's leading space."""
        return split_forms(self.paraphrases.value, leading(self.option))

    def refresh(self, number: int, premise: str) -> None:
        """Show the 1-based number and how the option joins ``premise`` (the ␣ marker, the fix button)."""
        self.number.value = f"{number}"
        bad = glued(premise, self.option)
        self.fix.layout.display = None if bad else "none"  # before the preview: the page sees them in this order
        (self.add_class if bad else self.remove_class)("sl-glued")
        self.join.value = join_preview(premise, self.option, self.forms())
