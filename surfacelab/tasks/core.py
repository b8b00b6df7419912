"""Core objects of the task registry: ``Template`` and ``Item`` (a loaded split, ``Task``, is in :mod:`.task`).

Rendering model
---------------
Every loader turns a raw dataset record into a flat dict of *fields* (for example
``{"premise": ..., "choices": [...], "label": 1, "bridge": " so"}``).  A :class:`Template`
turns fields into strings: the premise, one option string per answer and the domain premise.
Each rendered :class:`Item` keeps both ``meta["raw"]`` (the record exactly as read) and
``meta["fields"]`` (what the template saw), so :meth:`Task.with_template` can re-render a
whole task under another template or domain premise without reading the file again.  That is
the hook ``ablate()`` uses.

Format strings
--------------
String parts of a template are patterns over the fields: literal text and ``{field}`` names, ``{{`` / ``}}`` for
a literal brace, rendered with ``str.format``.  A pattern holds field names only (``check_pattern``): no format
spec, conversion or attribute / index access, so that a pattern typed in the explorer or read from a file (a
session, a template set) cannot make an item cost more than its fields.  The option pattern is applied once per
choice with these extra keys:

* ``choice``          the choice text as in the data;
* ``choice_lc``       the choice with its first character lower-cased;
* ``choice_lc_trim``  ``choice_lc`` without its last character (drops a final period);
* ``choice_lower``    the whole choice lower-cased;
* ``index`` / ``letter``  0-based position and "A", "B", ...

Classification tasks (SST-2, RTE, ...) give ``options`` as a fixed list of verbalisers instead.
Any part may also be a callable ``fields -> str`` (or ``fields -> list[str]`` for options).

Harness-style templates (``variant="lm-eval"``, :mod:`surfacelab.tasks.harness`) also set
``target_delimiter`` (the string put between the prompt and every answer, lm-evaluation-harness's
``target_delimiter``; length-normalised scorers do not count it), ``preamble`` (text before any
few-shot examples, the harness's ``description``) and ``gold`` (when the harness orders the
answers differently from the task's label).
"""

from __future__ import annotations

import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any


#: The flat fields a parser makes of one record and a template renders (see the module docstring).
Fields = dict[str, Any]
Renderer = str | Callable[[Fields], str]
OptionRenderer = str | Sequence[str] | Callable[[dict[str, Any]], list[str]]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


#: The string parts of a Template that are patterns (``options`` only when it is a string).
PATTERN_PARTS = ("premise", "options", "domain_premise", "per_option_premise", "shot", "preamble")


def check_pattern(pattern: str, part: str) -> str:
    """``pattern`` when it is a template pattern: literal text and ``{field}`` names (``{{`` / ``}}`` for braces).

    A format spec (``{premise:>20000000}``: a width allocates that many characters for every item), a conversion
    (``{choice!r}``), attribute or index access (``{premise.__class__}``, ``{choices[0]}``) and positional fields
    (``{}``, ``{0}``) are refused before anything is rendered: patterns come from people and files, and a field name
    is all a template needs.

    Args:
        pattern: the pattern.
        part: what it is, for the message (``premise``, ``options``, ``domain_premise``, ...).

    Raises:
        ValueError: naming ``part`` and what is wrong with the pattern.

    >>> check_pattern("{premise} because {{so}}", "premise")
    '{premise} because {{so}}'
    """
    if not isinstance(pattern, str):
        raise ValueError(f"{part}: expected a pattern (str), got {type(pattern).__name__}")
    try:
        fields = [(name, spec, conv) for _, name, spec, conv in string.Formatter().parse(pattern) if name is not None]
    except ValueError as err:
        raise ValueError(f"{part}: {err} in the pattern (write {{{{ and }}}} for a literal brace)") from None
    for name, spec, conv in fields:
        shown = "{" + name + (f"!{conv}" if conv else "") + (f":{spec}" if spec else "") + "}"
        shown = shown if len(shown) <= 60 else shown[:59] + "…"
        if name == "" or name.isdigit():
            what = "is positional (no name)"
        elif "." in name or "[" in name:
            what = "has attribute or index access"
        elif not name.isidentifier():
            what = "is not a field name (letters, digits and _)"
        elif conv is not None:
            what = f"has a conversion (!{conv})"
        elif spec:
            what = "has a format spec"
        else:
            continue
        base = name.split(".")[0].split("[")[0]
        raise ValueError(f"{part}: the field {shown} {what}; a pattern takes field names only, such as "
                         f"{{{base if base.isidentifier() else 'premise'}}}")
    return pattern


def _fmt(pattern: str, values: dict[str, Any], template: str, part: str) -> str:
    """Format ``pattern`` (checked by ``check_pattern``) with ``values``; a missing field becomes a ValueError naming
    it."""
    try:
        return pattern.format(**values)
    except KeyError as exc:
        avail = sorted(k for k, v in values.items() if isinstance(v, (str, int)))
        raise ValueError(
            f"template {template!r}: {part} uses field {{{exc.args[0]}}}, which this task does "
            f"not provide; available fields: {avail}"
        ) from None


def _choice_values(fields: dict[str, Any], choice: str, i: int) -> dict[str, Any]:
    """Fields plus the per-choice keys documented in the module docstring."""
    lc = choice[:1].lower() + choice[1:]
    return {
        **fields,
        "choice": choice,
        "choice_lc": lc,
        "choice_lc_trim": lc[:-1],
        "choice_lower": choice.lower(),
        "index": i,
        "letter": LETTERS[i] if i < len(LETTERS) else str(i),
    }


@dataclass(frozen=True)
class Template:
    """How a task's fields become a premise, option strings and a domain premise.

    Its string parts are patterns, checked when the template is made (``check_pattern``: a bad one is refused
    before any item is rendered).

    Attributes:
        name: short identifier, e.g. ``"copa/paper"`` or ``"sst2-movie-review"``.
        premise: format string or callable giving the conditional premise (the context).
        options: a format string applied per choice, a fixed list of verbalisers (classification
            tasks, index = label), or a callable returning the option strings.
        domain_premise: format string or callable giving the domain premise x_domain.
        description: one line for tables.
        per_option_premise: set only for "flipped" tasks (COPA-flipped): a per-choice format
            string/callable giving a *different context per option*; the option strings are then
            the shared continuation (see :class:`Item`).
        shot: optional format string for one few-shot example, with the fields plus ``{answer}``
            (the gold option string); default is rendered premise + gold option + newline.
        target_delimiter: prepended to every rendered option (lm-eval's ``target_delimiter``);
            ``per_char`` / ``per_byte`` divide by the option's length *without* it, as the
            harness's ``acc_norm`` / ``acc_bytes`` do. Empty for the paper's templates, whose
            options carry their own leading space (counted).
        preamble: text in front of the premise and of any few-shot examples (the harness's
            ``description``); not repeated inside the examples.
        gold: callable ``fields -> int`` giving the gold option index when the options are not in
            label order (default: ``fields["label"]``).
    """

    name: str
    premise: Renderer
    options: OptionRenderer
    domain_premise: Renderer
    description: str = ""
    per_option_premise: Renderer | None = None
    shot: Renderer | None = None
    target_delimiter: str = ""
    preamble: Renderer | None = None
    gold: Callable[[dict[str, Any]], int] | None = None

    def __post_init__(self) -> None:
        for part in PATTERN_PARTS:
            value = getattr(self, part)
            if isinstance(value, str):
                try:
                    check_pattern(value, part)
                except ValueError as err:
                    raise ValueError(f"template {self.name!r}: {err}") from None

    def _part(self, spec: Renderer, values: dict[str, Any], part: str) -> str:
        if callable(spec):
            return spec(values)
        if not isinstance(spec, str):
            raise ValueError(f"template {self.name!r}: {part} must be a str or callable, got {type(spec).__name__}")
        return _fmt(spec, values, self.name, part)

    def render_options(self, fields: dict[str, Any]) -> list[str]:
        """Option strings for one record (each starting with ``target_delimiter``)."""
        spec = self.options
        if callable(spec):
            options = list(spec(fields))
        elif isinstance(spec, str):
            choices = fields.get("choices")
            if choices is None:
                raise ValueError(
                    f"template {self.name!r}: options is a per-choice format string but this task "
                    "has fixed labels; give options as a list of verbalisers"
                )
            options = [_fmt(spec, _choice_values(fields, c, i), self.name, "options") for i, c in enumerate(choices)]
        else:
            options = [str(o) for o in spec]
        return [self.target_delimiter + o for o in options]

    def render_preamble(self, fields: dict[str, Any]) -> str:
        """The preamble for one record ("" when the template has none)."""
        return "" if self.preamble is None else self._part(self.preamble, fields, "preamble")

    def gold_index(self, fields: dict[str, Any]) -> int:
        """Index of the gold option for one record."""
        return int(fields["label"]) if self.gold is None else int(self.gold(fields))

    def render(self, fields: dict[str, Any]) -> tuple[str, list[str], str, list[str] | None]:
        """Return ``(premise, options, domain_premise, premise_per_option)`` for one record.

        The premise includes the preamble; :meth:`render_body` gives it without.
        """
        options = self.render_options(fields)
        premise = self.render_preamble(fields) + self.render_body(fields)
        domain = self._part(self.domain_premise, fields, "domain_premise")
        per_option = None
        if self.per_option_premise is not None:
            choices = fields.get("choices") or [""] * len(options)
            spec = self.per_option_premise
            per_option = [
                spec(_choice_values(fields, c, i)) if callable(spec)
                else _fmt(spec, _choice_values(fields, c, i), self.name, "per_option_premise")
                for i, c in enumerate(choices)
            ]
        return premise, options, domain, per_option

    def render_body(self, fields: dict[str, Any]) -> str:
        """The premise of one record without the preamble."""
        return self._part(self.premise, fields, "premise")

    def render_shot(self, fields: dict[str, Any]) -> str:
        """One labelled few-shot example (premise without the preamble, the gold answer filled in)."""
        if self.per_option_premise is not None:
            raise ValueError(f"template {self.name!r}: few-shot prefixes are not defined for flipped tasks")
        premise = self.render_body(fields)
        answer = self.render_options(fields)[self.gold_index(fields)]
        if self.shot is None:
            text = premise + answer
            return text if text.endswith("\n") else text + "\n"
        return self._part(self.shot, {**fields, "answer": answer}, "shot")

    def with_domain_premise(self, domain_premise: Renderer, name: str | None = None) -> "Template":
        """Copy of this template with another domain premise."""
        return replace(self, domain_premise=domain_premise, name=name or f"{self.name}+dp")


@dataclass
class Item:
    """One evaluation item: a premise, its option strings, the gold index and a domain premise.

    Scoring convention: option ``i`` is the request ``(context_i, options[i])`` where
    ``context_i`` is ``premise`` -- or ``premise_per_option[i]`` when that is set (COPA-flipped,
    where each option becomes the context and the original premise is the one shared
    continuation, so ``options`` holds that same string for every option and ``premise`` is
    ``""``).  The domain request for option ``i`` is ``(domain_premise, options[i])``.  Use
    :meth:`requests` / :meth:`domain_requests` rather than rebuilding the pairs by hand.

    ``meta`` always holds ``raw`` (the source record), ``fields`` (what the template saw),
    ``index`` (0-based position in the split) and ``line`` (1-based line in a local file, or
    None); few-shot items add ``fewshot_prefix``, ``shot_ids`` and ``shot_fields``.
    """

    id: str
    premise: str
    options: list[str]
    gold: int
    domain_premise: str
    meta: dict[str, Any] = field(default_factory=dict)
    premise_per_option: list[str] | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.gold < len(self.options):
            raise ValueError(f"item {self.id!r}: gold={self.gold} is not a valid index into "
                             f"{len(self.options)} options")
        if self.premise_per_option is not None and len(self.premise_per_option) != len(self.options):
            raise ValueError(f"item {self.id!r}: premise_per_option must have one entry per option")

    @property
    def gold_option(self) -> str:
        """The gold option string."""
        return self.options[self.gold]

    def contexts(self) -> list[str]:
        """The context each option is scored under."""
        if self.premise_per_option is not None:
            return list(self.premise_per_option)
        return [self.premise] * len(self.options)

    def requests(self) -> list[tuple[str, str]]:
        """``(context, continuation)`` per option for the conditional score."""
        return list(zip(self.contexts(), self.options))

    def domain_requests(self) -> list[tuple[str, str]]:
        """``(domain_premise, continuation)`` per option for the domain-conditional score."""
        return [(self.domain_premise, o) for o in self.options]
