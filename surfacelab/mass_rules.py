"""The winner rules of surface-form mass and how every view names them: one wording for ``MassResult.explain``,
the paraphrase figure, the workbench and the notebooks."""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ._format import distinct

#: What each winner rule means (the rows of ``MassResult.winners``).
WINNER_RULES = {
    "lm": "concept of the single most likely form, log P(f|x)",
    "mass": "concept with the largest summed mass, logsumexp_f log P(f|x)",
    "dcpmi": "concept with the largest log_mass - domain_log_mass",
    "dcpmi_form": "concept of the form with the largest log P(f|x) - log P(f|x_dom)",
}

#: What each rule is called wherever its winner is shown (explain, figure, workbench, notebooks). The keys stay as
#: results are saved (``winners.scorer``, ``winners_table`` columns); the names never reuse the scorer table's "LM" or
#: "DC-PMI", which score the options as given, while these rules read every listed form.
RULE_NAMES = {"lm": "best single form", "mass": "concept mass", "dcpmi": "concept DC-PMI", "dcpmi_form": "form DC-PMI"}

#: What form DC-PMI is, said wherever its winner is shown.
FORM_DCPMI = ("the DC-PMI of each single form, log P(form|premise) − log P(form|domain premise); the concept of the "
              "best form wins")

def named_winners(winners: pd.DataFrame, quote: Callable[[str], str] = repr) -> list[str]:
    """Each row of ``winners`` as every view names it: a rule that picks a form shows that form and its concept
    (``best single form: ' the oven' (concept 'oven')``), a rule that picks a concept the concept alone
    (``concept mass: 'pan'``). ``quote`` writes a form or concept (the figure marks a leading space as ␣)."""
    return [f"{RULE_NAMES.get(s, s)}: " + (f"{quote(f)} (concept {quote(c)})" if isinstance(f, str) else quote(c))
            for s, c, f in zip(winners["scorer"], winners["concept"], winners["form"])]


def winner_sentences(concepts: pd.DataFrame, winners: pd.DataFrame, answer: str | None = None,
                     quote: Callable[[str], str] = repr) -> list[str]:
    """Why each rule's winner wins, one sentence per rule opening with the winner as ``named_winners`` writes it,
    then which rules pick ``answer`` (``MassResult.explain`` and the workbench's ``viz.mass_reading`` say this)."""
    c = concepts.set_index("concept")
    named = dict(zip(winners["scorer"], named_winners(winners, quote)))
    w = dict(zip(winners["scorer"], winners["concept"]))
    lm_c, mass_c = w["lm"], w["mass"]
    out = [f"{named['lm']}, the most likely of all the listed forms, not only of the options "
           f"(P(form|premise) = {np.exp(c.loc[lm_c, 'best_form_logprob']):.3g})."]
    if mass_c == lm_c:
        out.append(f"{named['mass']} too, whose forms hold {distinct([c.loc[mass_c, 'share']], percent=True)[0]} "
                   f"of the listed mass.")
    else:
        ours, theirs = distinct([c.loc[mass_c, "share"], c.loc[lm_c, "share"]], percent=True)
        split = distinct([c.loc[mass_c, "best_form_share"]], percent=True)[0]
        out.append(f"{named['mass']}, whose {int(c.loc[mass_c, 'n_forms'])} forms hold {ours} of the listed mass "
                   f"against {theirs} for {quote(lm_c)}, though the best of them holds only {split} of it.")
    if "dcpmi" in w:
        out.append(f"{named['dcpmi']}, the concept whose summed mass the premise raises most over the domain "
                   f"premise (log_mass − domain_log_mass).")
        out.append(f"{named['dcpmi_form']}. Form DC-PMI is {FORM_DCPMI}.")
    if answer is not None:
        right = [RULE_NAMES.get(s, s) for s, k in w.items() if k == answer]
        out.append(f"The intended answer, concept {quote(answer)}, wins under {', '.join(right) or 'no rule'}.")
    return out
