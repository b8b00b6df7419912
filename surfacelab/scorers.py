"""The scorer registry: how one option's raw log-probs become a score (higher is better).

A scorer reads the raw columns of the conditions it ``needs`` (:data:`surfacelab.engine.requests.CONDITIONS`);
``register_scorer`` adds one to every option table, run and scorer view. The built-in scorers and their formulas
are listed in :mod:`surfacelab.scoring`.

Two built-in scorers calibrate a task whose options are the same label verbalizers for every item (SST-2, SST-5,
TREC, RTE, CB, BoolQ) and are not defined elsewhere (:func:`not_applicable` says why):

* ``batch_cal``, Batch Calibration (Zhou et al., ICLR 2024, arXiv 2309.17249): log p(y|x) − log 1/M Σ_i p(y|x_i),
  where p is the model's distribution over the label set (each item's option probabilities normalised over its
  options, as the paper's p(y|x_i, C) is a distribution over the labels) and the mean runs over the M items of the
  run. Label-free and with no content-free input, but it needs the other items: on one item it is not defined.
* ``domain_cal``, domain-context calibration (Fei et al., ACL 2023, arXiv 2305.19148): log P(y|x) − log 1/S Σ_s
  P(y|x̃_s), where x̃_s are S content-free inputs made of random in-domain words rendered through the task's template
  (condition ``domain_ctx``, :mod:`surfacelab.calibration`). The paper (as contextual calibration) divides by the
  prior normalised over the labels and normalises the result; both move every option of an item by the same amount,
  so the ranking is the paper's. Its inputs come from a task's items: on one item it is not defined.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .engine.requests import CONDITIONS, EXTRA_CONDITIONS, LOGPROB_COLUMNS
from .letters.math import batch_prior, log_normalise
from .registry import Derived, Registry


@dataclass(frozen=True)
class Scorer:
    """A way to turn an option table into one number per option (higher is better).

    ``compute`` gets the whole option table (raw columns: ``logprob``, ``n_tokens``, ``n_chars``,
    ``n_bytes``, and the log-prob column of every other condition, NaN where not scored) and must work row by row,
    unless ``batch``; ``label`` is the header views show (default: the name); ``formulation`` how the item is put to
    the model (``FORMULATIONS``: what ``evaluate``'s accuracy table reports beside each scorer).

    ``fixed_labels``: the scorer is defined only where every item has the same options (a classification task's
    label verbalizers); elsewhere its column is NaN (:func:`not_applicable`). ``batch``: the reason the scorer is not
    defined on one item ("" when it is), because ``compute`` reads every item of a run (rows grouped by the table's
    ``item`` column) or its inputs come from a task's items; a run's item keeps the score the run gave it.
    """

    name: str
    column: str
    needs: tuple[str, ...]
    formula: str
    description: str
    compute: Callable[[pd.DataFrame], pd.Series]
    label: str = ""
    formulation: str = "cloze"
    fixed_labels: bool = False
    batch: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name)
        if self.formulation not in FORMULATIONS:
            raise ValueError(f"formulation: expected one of {list(FORMULATIONS)}, got {self.formulation!r}")


#: How a scorer puts an item to the model: ``cloze`` (each option as text after the question, OLMES's cloze
#: formulation, with or without a normalisation), ``calibrated`` (the cloze score of a fixed label set with a prior
#: estimated from other inputs divided out: not one of OLMES's normalisations), ``prior`` (the option without the
#: question), ``channel`` (the question after the option), ``mcf`` (the option's letter after the lettered question,
#: OLMES's multiple-choice formulation) and ``choices-only`` (the letter after the lettered options, no question).
FORMULATIONS = ("cloze", "calibrated", "prior", "channel", "mcf", "choices-only")


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

#: What a fixed-label scorer says where the items' options differ (COPA, ARC, MMLU, ...).
OPTIONS_DIFFER = "not applicable: options differ per item"


def label_sets(table: pd.DataFrame) -> int:
    """How many different option lists the items of an option table have (1: a fixed label set)."""
    if "item" not in table:
        return 1
    return table.groupby("item", sort=False)["option"].agg(tuple).nunique()


def not_applicable(scorer: Scorer, table: pd.DataFrame) -> str:
    """Why ``scorer`` gives no score on ``table`` ("" when it does): a batch scorer on one item, or a fixed-label
    scorer on items whose options differ."""
    if scorer.batch and ("item" not in table or table["item"].nunique() < 2):
        return f"not applicable to one item: {scorer.batch} (sl.evaluate a task with a fixed label set)"
    if scorer.fixed_labels and label_sets(table) > 1:
        return OPTIONS_DIFFER
    return ""


def batch_calibrated(table: pd.DataFrame) -> pd.Series:
    """Batch Calibration of an option table of several items that share one label set: per row,
    log p(y|x) − log mean_i p(y|x_i), p normalised over each item's options (``letters.math.batch_prior``)."""
    if "item" not in table or not len(table):
        return pd.Series(np.nan, index=table.index)
    position = table.groupby("item", sort=False).cumcount()
    grid = table.assign(position=position).pivot(index="item", columns="position", values=_LP)
    logp = log_normalise(grid.to_numpy(dtype=np.float64))
    calibrated = logp - np.log(batch_prior(np.exp(logp)))
    rows = grid.index.get_indexer(table["item"])
    return pd.Series(calibrated[rows, position.to_numpy()], index=table.index)


register_scorer(Scorer(
    "batch_cal", "batch_cal", ("premise",), "log p(y|x) − log mean_i p(y|x_i)",
    "Batch Calibration (Zhou et al. 2024): the run's mean label distribution divided out; p normalised over the "
    "label set; fixed label sets only", batch_calibrated, "BC", fixed_labels=True, formulation="calibrated",
    batch="Batch Calibration divides by the mean label distribution of a run's items"))

_DCTX = LOGPROB_COLUMNS["domain_ctx"]
register_scorer(Scorer(
    "domain_cal", "domain_cal", ("premise", "domain_ctx"), "lm − log mean_s P(y|x̃_s)",
    "domain-context calibration (Fei et al. 2023): the prior of random in-domain words through the task's template "
    "divided out; fixed label sets only", lambda t: t[_LP] - t[_DCTX], "DomainCal", fixed_labels=True,
    formulation="calibrated",
    batch="domain-context calibration's content-free inputs are random words of a task's items through its template"))

#: Live views for figures: scorer column -> display label, scorer column -> its rank column.
SCORER_LABELS = Derived(SCORERS, lambda s: s.column, lambda s: s.label)
SCORER_RANKS = Derived(SCORERS, lambda s: s.column, lambda s: f"rank_{s.name}")
#: The columns of the built-in scorers that read a task's texts (``EXTRA_CONDITIONS``) or a run's items (``batch``):
#: only where a run scored them.
TASK_TEXT_COLUMNS = frozenset(s.column for s in SCORERS.values() if set(s.needs) & set(EXTRA_CONDITIONS) or s.batch)


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
