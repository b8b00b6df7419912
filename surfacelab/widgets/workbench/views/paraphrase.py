"""The paraphrase view: each option's concept mass over its listed surface forms."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from .... import viz
from ....paraphrase import mass
from ...kit.plot import PlotView
from ..inputs import read_contexts
from .base import INFO_MARK, View

if TYPE_CHECKING:
    from ..inputs import Inputs

@dataclass(frozen=True)
class Concepts:
    """The paraphrase view's concept set: one concept per option, named after the option."""

    names: tuple[str, ...]
    forms: tuple[tuple[str, ...], ...]  # per option: the option itself first, then its paraphrases

    def as_dict(self) -> dict[str, list[str]]:
        """``{concept: [forms]}`` for ``paraphrase.mass``."""
        return {n: list(f) for n, f in zip(self.names, self.forms)}


def concepts_of(options: tuple[str, ...], paraphrases: tuple[tuple[str, ...], ...]) -> Concepts:
    """Concepts from options and their paraphrase forms (already carrying the option's leading space).

    A concept is named after its option without surrounding whitespace; two options that differ only
    in whitespace get their 1-based number added ("bathtub (1)", "bathtub (3)"). Forms repeated within
    one option, or equal to the option itself, are listed once.
    """
    bare = [o.strip() or o for o in options]
    names = [f"{b} ({i + 1})" if bare.count(b) > 1 else b for i, b in enumerate(bare)]
    forms = tuple(tuple(dict.fromkeys([o, *ps])) for o, ps in zip(options, paraphrases))
    return Concepts(tuple(names), forms)


class ParaphraseView(View):
    """Each option's paraphrase mass: its probability summed over its listed surface forms."""

    # computed first: its requests (every option and paraphrase under the premise and the domain premise,
    # with the scorer view's top_k) include the scorer view's, so both views cost one forward pass
    name, title, order, main = "paraphrase", "3 · Paraphrase mass", 0, "concepts"
    needs = ("premise", "domain_premise", "options", "paraphrases", "gold", "chat_template", "lm")

    def build(self) -> list[w.Widget]:
        self.plot = PlotView()
        return [self.plot]

    def compute(self, inp: "Inputs") -> Any:
        concepts = concepts_of(inp.options, inp.paraphrases)
        answer = concepts.names[inp.gold] if inp.gold is not None else None
        # top_k as in the scorer view: the option forms' scores and alternatives come from that pass
        premise, domain = read_contexts(self.workbench.lm, inp)  # as chat turns under a chat template
        return mass(self.workbench.lm, premise, concepts.as_dict(), domain_premise=domain, answer=answer,
                    top_k=self.workbench.top_k)

    def show(self, inp: "Inputs", result: Any) -> None:
        self.frames = {"concepts": result.concepts, "forms": result.forms, "winners": result.winners,
                       "topk": result.topk}
        self.spec = viz.paraphrase_mass_spec(result.forms, result.concepts, result.winners, answer=result.answer)
        self.plot.show(self.spec)
        notes = [p.text for p in self.workbench.problems_for(self.name)]
        reading = viz.mass_reading(result.concepts, result.winners, answer=result.answer)
        self.text.value = "".join(f"<div class='sl-note'>{INFO_MARK} {html.escape(n)}</div>" for n in notes) + \
            f"<div class='sl-explain'>{html.escape(reading)}</div>"
