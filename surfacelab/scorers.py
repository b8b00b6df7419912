"""The scorer registry: how one option's raw log-probs become a score (higher is better).

A scorer reads the raw columns of the conditions it ``needs`` (:data:`surfacelab.engine.requests.CONDITIONS`);
``register_scorer`` adds one to every option table, run and scorer view. The built-in scorers and their formulas
are listed in :mod:`surfacelab.scoring`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

from .engine.requests import CONDITIONS, EXTRA_CONDITIONS, LOGPROB_COLUMNS
from .registry import Derived, Registry


@dataclass(frozen=True)
class Scorer:
    """A way to turn an option table into one number per option (higher is better).

    ``compute`` gets the whole option table (raw columns: ``logprob``, ``n_tokens``, ``n_chars``,
    ``n_bytes``, and the log-prob column of every other condition, NaN where not scored) and must work row by row;
    ``label`` is the header views show (default: the name); ``formulation`` how the item is put to the model
    (``FORMULATIONS``: what ``evaluate``'s accuracy table reports beside each scorer).
    """

    name: str
    column: str
    needs: tuple[str, ...]
    formula: str
    description: str
    compute: Callable[[pd.DataFrame], pd.Series]
    label: str = ""
    formulation: str = "cloze"

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"formulation: expected one of {list(FORMULATIONS)}, got {self.formulation!r}")


#: How a scorer puts an item to the model: ``cloze`` (each option as text after the question, OLMES's cloze
#: formulation, with or without a normalisation), ``prior`` (the option without the question), ``channel`` (the
#: question after the option), ``mcf`` (the option's letter after the lettered question, OLMES's multiple-choice
#: formulation) and ``choices-only`` (the letter after the lettered options, no question).
FORMULATIONS = ("cloze", "prior", "channel", "mcf", "choices-only")


#: Top scores closer than this are a tie in ``explain`` (float noise of separately batched requests, not a preference).
TIE_TOL = 1e-6
#: Every scorer, in column order (``register_scorer`` adds to it).
SCORERS: Registry[Scorer] = Registry("scorer")
#: The raw columns of each condition in an option table (premise: its log-prob and the option's lengths).
RAW_COLUMNS = {name: [c.column, *(("n_tokens", "n_chars", "n_bytes") if name == "premise" else ())]
               for name, c in CONDITIONS.items()}


def register_scorer(scorer: Scorer, *, overwrite: bool = False) -> Scorer:
    """Add a scorer: its column (and ``rank_<name>``) joins every ``MCResult.table`` and the scorer views.

    Args:
        scorer: the ``Scorer``; its name must be new and its column unused unless ``overwrite``.
        overwrite: replace the scorer registered under the same name.
    """
    if not isinstance(scorer, Scorer):
        raise TypeError(f"scorer: expected a Scorer, got {type(scorer).__name__}")
    bad = set(scorer.needs) - set(CONDITIONS)
    if bad:
        raise ValueError(f"scorer: unknown condition(s) {sorted(bad)}; known: {tuple(CONDITIONS)}")
    clash = [s.name for s in SCORERS.values() if s.column == scorer.column and s.name != scorer.name]
    raw = {c for cols in RAW_COLUMNS.values() for c in cols} - {LOGPROB_COLUMNS["premise"]}  # lm reads its own
    if clash or scorer.column in raw:
        raise ValueError(f"scorer: column {scorer.column!r} is already used by "
                         f"{clash[0] if clash else 'the raw table'}")
    return SCORERS.register(scorer.name, scorer, overwrite=overwrite)


#: The raw columns the built-in scorers read: each condition's log-probs.
_LP, _DOM, _NULL, _CH, _MCF, _CHO = (LOGPROB_COLUMNS[c] for c in ("premise", "domain", "null", "channel", "mcf",
                                                                  "choices"))
for _s in [
    Scorer("lm", _LP, ("premise",), "Σ log P(y|x)", "summed log-prob of the option", lambda t: t[_LP],
           "LM"),
    Scorer("avg", "avg_token", ("premise",), "lm / #tokens(y)", "per-token average (the paper's Avg)",
           lambda t: t[_LP] / t["n_tokens"], "Avg"),
    Scorer("per_char", "per_char", ("premise",), "lm / len(y)", "per character (lm-eval acc_norm)",
           lambda t: t[_LP] / t["n_chars"], "per char"),
    Scorer("per_byte", "per_byte", ("premise",), "lm / bytes(y)", "per UTF-8 byte (lm-eval acc_bytes)",
           lambda t: t[_LP] / t["n_bytes"], "per byte"),
    Scorer("unc", "unc", ("domain",), "Σ log P(y|x_dom)", "option prior in the domain, premise ignored",
           lambda t: t[_DOM], "Unc", "prior"),
    Scorer("dcpmi", "dcpmi", ("premise", "domain"), "lm − unc", "domain-conditional PMI (Holtzman et al. 2021)",
           lambda t: t[_LP] - t[_DOM], "DC-PMI"),
    Scorer("pmi_null", "pmi_null", ("premise", "null"), "lm − Σ log P(y|BOS)",
           "PMI against an empty context (lm-eval acc_mutual_info)", lambda t: t[_LP] - t[_NULL],
           "PMI-null"),
    Scorer("channel", "channel", ("channel",), "Σ log P(x|y)",
           "noisy channel (Min et al. 2022): the input scored after the option or its label word, so every option "
           "is scored on the same tokens and the scores compare without a normalisation", lambda t: t[_CH],
           "channel", "channel"),
    Scorer("mcf", "mcf", ("mcf",), "log P(' A'|x, lettered options)",
           "multiple-choice formulation (OLMES, Gu et al. 2024): the option's letter after the question, its "
           "lettered options and 'Answer:'", lambda t: t[_MCF], "MCF", "mcf"),
    Scorer("choices", "choices", ("choices",), "log P(' A'|lettered options)",
           "choices-only baseline (Balepur et al. 2024): the MCF prompt with the question left out; an item right "
           "under it is answered from the options alone", lambda t: t[_CHO], "choices only", "choices-only"),
]:
    register_scorer(_s)

#: Live views for figures: scorer column -> display label, scorer column -> its rank column.
SCORER_LABELS = Derived(SCORERS, lambda s: s.column, lambda s: s.label)
SCORER_RANKS = Derived(SCORERS, lambda s: s.column, lambda s: f"rank_{s.name}")
#: The columns of the built-in scorers that read a task's texts (``EXTRA_CONDITIONS``): only where a run scored them.
TASK_TEXT_COLUMNS = frozenset(s.column for s in SCORERS.values() if set(s.needs) & set(EXTRA_CONDITIONS))


def list_scorers() -> pd.DataFrame:
    """The registered scorers with their labels, columns, formulas and the conditions they need."""
    return pd.DataFrame([{"scorer": s.name, "label": s.label, "column": s.column, "formula": s.formula,
                          "needs": ",".join(s.needs), "description": s.description} for s in SCORERS.values()])


def get_scorer(name: str) -> Scorer:
    """Look up a scorer by name (``ValueError`` naming ``scorer``, with close matches, if unknown)."""
    return SCORERS[name]


def check_scorers(scorers: str | Sequence[str] | None) -> list[str]:
    """Scorer names from a list or a comma-separated string (None: every registered scorer), each checked, once each."""
    if scorers is None:
        return list(SCORERS)
    if isinstance(scorers, str):
        scorers = [s.strip() for s in scorers.split(",") if s.strip()]
    if not isinstance(scorers, Sequence) or not all(isinstance(s, str) for s in scorers):
        raise TypeError("scorers: expected a list of scorer names or a comma-separated string")
    if not scorers:
        raise ValueError("scorers: must name at least one scorer")
    for s in scorers:
        get_scorer(s)
    return list(dict.fromkeys(scorers))
