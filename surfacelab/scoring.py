"""``score()``: every option under the premise, the domain premise and an empty context, ranked by every scorer
of :mod:`surfacelab.scorers`.

Definitions (y = option, x = premise, x_dom = domain premise, sums over the option's tokens):

============  ==============================  =========================================
scorer        column                          definition
============  ==============================  =========================================
lm            logprob                         Σ log P(y | x)
avg           avg_token                       lm / #tokens(y)  (the paper's Avg)
per_char      per_char                        lm / len(y)  (lm-eval ``acc_norm``)
per_byte      per_byte                        lm / UTF-8 bytes(y)  (``acc_bytes``)
unc           unc                             Σ log P(y | x_dom)
dcpmi         dcpmi                           lm − unc  (domain-conditional PMI)
pmi_null      pmi_null                        lm − Σ log P(y | empty context = BOS/EOS)
channel       channel                         Σ log P(x | y)  (noisy channel, Min et al. 2022)
mcf           mcf                             log P(" A" | x with lettered options, "Answer:")  (OLMES MCF)
choices       choices                         log P(" A" | lettered options, "Answer:")  (choices-only)
batch_cal     batch_cal                       log p(y | x) − log mean_i p(y | x_i), p over the label set
domain_cal    domain_cal                      lm − log mean_s P(y | x̃_s), x̃_s random in-domain words
============  ==============================  =========================================

``channel``, ``mcf`` and ``choices`` need request texts written from a task's fields (:mod:`surfacelab.formats`):
``evaluate`` scores them; a free-text ``score`` leaves their columns NaN (``MCResult.winners`` skips them).
``batch_cal`` (Batch Calibration) reads every item of a run and ``domain_cal`` (domain-context calibration) random
words of a task's items through its template (:mod:`surfacelab.calibration`), both of a fixed label set: on one item,
or where the options differ per item, they are NaN and ``MCResult.not_applicable`` says why.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np
import pandas as pd

from . import chat
from ._checks import is_int
from ._format import gap
from ._results import JSONResult, model_meta
from .engine.requests import CONDITIONS, CUT_COLUMNS, LOGPROB_COLUMNS, Entry, Plan, Scores
from .safecsv import to_csv
from .scorers import RAW_COLUMNS, SCORERS, TIE_TOL, Scorer, get_scorer, not_applicable
from .text import check_options, check_text, glued

if TYPE_CHECKING:
    from .models import LM


@dataclass
class MCResult(JSONResult):
    """Scores of one multiple-choice item.

    ``table`` has one row per option (the raw log-probs, lengths, every scorer's column,
    ``rank_<scorer>``, and ``truncated`` / ``domain_truncated``: context tokens cut from the left of
    the premise / domain premise to fit the model's window, 0 when nothing was cut); ``tokens`` has
    one row per scored token per condition.
    """

    premise: str
    options: list[str]
    domain_premise: str | None
    model: str
    table: pd.DataFrame
    tokens: pd.DataFrame
    gold: int | None = None
    meta: dict = field(default_factory=dict)

    def scores(self, scorer: str) -> pd.Series:
        """The scores of every option under ``scorer``, indexed by option."""
        s = get_scorer(scorer)
        return self.table.set_index("option")[s.column]

    def finite_scores(self, scorer: str) -> pd.Series:
        """``scores(scorer)``, checked: every option has a finite score (what ``winner``, ``explain`` and ``why``
        compare).

        Raises:
            ValueError: naming ``scorer``: it reads a domain premise this result lacks, or its scores are NaN or
                infinite (each such option named).
        """
        s = self.scores(scorer)
        if np.isfinite(s.to_numpy(dtype=float)).all():
            return s
        reason = self.not_applicable(scorer)
        if reason:
            raise ValueError(f"scorer: {scorer!r} is {reason}")
        lacking = self._lacks(get_scorer(scorer))
        if lacking == "domain":
            raise ValueError(f"scorer: {scorer!r} needs a domain premise, and this result has none")
        if lacking:
            raise ValueError(f"scorer: {scorer!r} needs the {lacking} condition, which this result did not score")
        bad = ", ".join(f"{o!r} ({v})" for o, v in s.items() if not np.isfinite(v))
        raise ValueError(f"scorer: the scores of {scorer!r} are not finite ({bad}), so they rank nothing; the raw "
                         "log-prob columns of the table show which condition holds the NaN or infinity")

    def not_applicable(self, scorer: str) -> str:
        """Why ``scorer`` gives this result no scores ("" when it does): ``scorers.not_applicable`` on its table, or
        the reason its run recorded (``meta["not_applicable"]``: a run's item of a task whose options differ)."""
        s = get_scorer(scorer)
        if s.column in self.table and np.isfinite(self.table[s.column].to_numpy(dtype=float)).all():
            return ""
        return self.meta.get("not_applicable", {}).get(scorer) or not_applicable(s, self.table)

    def _lacks(self, scorer: Scorer) -> str:
        """The condition ``scorer`` reads that this result has no scores for ("" if none): the domain condition
        without a domain premise, or a condition not scored (the null context of a run's ``result(i)``). A model's
        NaN never reaches here: the plan refuses it."""
        for cond in scorer.needs:
            if cond == "domain" and self.domain_premise is None:
                return cond
            if all(c not in self.table or self.table[c].isna().all() for c in RAW_COLUMNS[cond]):
                return cond
        return ""

    def winner(self, scorer: str = "lm") -> str:
        """The option with the highest score under ``scorer`` (the first one in option order on an exact tie, as
        ``evaluate``'s predictions; ``top_options`` also counts scores within ``TIE_TOL`` as tied)."""
        return str(self.finite_scores(scorer).idxmax())

    def winners(self) -> pd.Series:
        """The winning option under every scorer whose conditions this result has and that applies to it."""
        return pd.Series({name: self.winner(name) for name, s in SCORERS.items()
                          if s.column in self.table and not self._lacks(s) and not self.not_applicable(name)},
                         name="winner")

    def explain(self) -> str:
        """Plain words on why the LM winner differs from the DC-PMI winner (length, prior, costly tokens)."""
        return explain(self)

    def show(self) -> Any:
        """The scorer table figure (``viz.scorer_table``), gold marked."""
        from . import viz

        return viz.scorer_table(self.table, gold=self.gold)

    def save(self, path: str | Path) -> Path:
        """Write ``.table`` as CSV (``*.csv``) or every field and frame as JSON (``*.json``, ``MCResult.load``)."""
        path = Path(path)
        if path.suffix == ".csv":
            to_csv(self.table, path)
            return path
        return super().save(path)

    def _repr_html_(self) -> str:
        return self.table.to_html(index=False, float_format=lambda v: f"{v:.3f}")


def _fmt(x: float) -> str:
    return f"{x:+.2f}" if np.isfinite(x) else "n/a"


def truncation_note(options: Sequence[str], cuts: Mapping[str, Sequence[int]]) -> str | None:
    """One sentence on the context tokens cut to fit the model's window, or None when nothing was cut.

    Args:
        options: the options of one item.
        cuts: condition name (``CONDITIONS``) -> the tokens dropped from the left of its context, per option (the
            condition's ``CUT_COLUMNS`` column of ``MCResult.table``; a condition not scored may be left out).
    """
    clauses = []
    for condition, cut in cuts.items():
        cut, what = [int(c) for c in cut], CONDITIONS[condition].under
        if not any(cut):
            continue
        if len(set(cut)) == 1:
            clauses.append(f"{what} lost its first {cut[0]} tokens for every option")
        else:
            each = ", ".join(f"{c} before {o!r}" for o, c in zip(options, cut))
            clauses.append(f"{what} lost its first tokens ({each}), so the options were scored on different contexts")
    if not clauses:
        return None
    return "Truncated to fit the model's window: " + "; ".join(clauses) + "."


def _cuts(table: pd.DataFrame) -> dict[str, pd.Series]:
    """Condition -> its truncation column of an option table (the conditions whose column it holds)."""
    return {c: table[col] for c, col in CUT_COLUMNS.items() if col in table}


def explain(result: MCResult) -> str:
    """Plain-language account of an ``MCResult``: LM winner vs DC-PMI winner and why (and any truncation)."""
    t = result.table
    note = truncation_note(t["option"], _cuts(t))
    return _explain(result) if note is None else f"{note} {_explain(result)}"


def top_options(scores: pd.Series, tol: float = TIE_TOL) -> list[str]:
    """The options (the index of ``scores``) scoring within ``tol`` of the top score, in option order: more than
    one is a tie."""
    return [str(o) for o, v in scores.items() if v >= scores.max() - tol]


def _top(result: MCResult, scorer: str) -> str:
    """ "the top option is ' a'", or "' a' and ' b' tie for the top (...)" under ``scorer``."""
    top = top_options(result.finite_scores(scorer))
    if len(top) == 1:
        return f"the top option is {top[0]!r}"
    names = ", ".join(map(repr, top[:-1])) + f" and {top[-1]!r}"
    return f"{names} tie for the top (scores within {TIE_TOL:g} of each other)"


def _explain(result: MCResult) -> str:
    t = result.table.set_index("option")
    if result.domain_premise is None:
        return (f"Under LM {_top(result, 'lm')}; no domain premise was given, so DC-PMI is not computed. Per "
                f"character, {_top(result, 'per_char')}.")
    if result.domain_premise == result.premise:
        return (f"Under LM {_top(result, 'lm')}. The domain premise equals the premise, so DC-PMI is 0 for every "
                "option and picks none: give a domain premise without the premise's evidence, such as ' the'.")
    if any(len(top_options(result.finite_scores(s))) > 1 for s in ("lm", "dcpmi")):
        return f"Under LM {_top(result, 'lm')}; under DC-PMI {_top(result, 'dcpmi')}."
    lm_top, pmi_top = result.winner("lm"), result.winner("dcpmi")
    lines = []
    if lm_top == pmi_top:
        others = t.drop(index=lm_top)
        margin = t.loc[lm_top, "dcpmi"] - others["dcpmi"].max() if len(others) else float("nan")
        return (f"{lm_top!r} wins under both LM and DC-PMI (DC-PMI margin {_fmt(margin)} nats): "
                f"the premise raises it more than any other option.")
    a, b = t.loc[lm_top], t.loc[pmi_top]
    lm_gap = a["logprob"] - b["logprob"]
    prior_gap = a[LOGPROB_COLUMNS["domain"]] - b[LOGPROB_COLUMNS["domain"]]
    runner = t.drop(index=pmi_top)["dcpmi"].idxmax()
    lead = (f"wins, {gap(b['dcpmi'] - a['dcpmi'])} nats ahead of it" if runner == lm_top else
            f"wins by {gap(b['dcpmi'] - t.loc[runner, 'dcpmi'])} nats over the runner-up {runner!r} and is "
            f"{gap(b['dcpmi'] - a['dcpmi'])} nats ahead of {lm_top!r}")
    lines.append(f"Under LM, {lm_top!r} beats {pmi_top!r} by {gap(lm_gap)} nats; under DC-PMI, {pmi_top!r} {lead}.")
    if a["n_tokens"] < b["n_tokens"]:
        per = a["per_char"] - b["per_char"]
        per_text = (f"per character {pmi_top!r} is ahead, by {gap(-per)} nats/char" if per < 0 else
                    f"per character {lm_top!r} still leads, by {gap(per)} nats/char")
        lines.append(f"Length: {pmi_top!r} has {int(b['n_tokens'])} tokens against {int(a['n_tokens'])}, and every "
                     f"extra token costs log-probability ({per_text}).")
    if prior_gap > 0:
        typed = result.meta.get("chat_user", {}).get("domain_premise", result.domain_premise)  # as given
        where = f"domain premise {typed!r}" + (" as a chat turn" if "chat_user" in result.meta else "")
        lines.append(f"Prior: without the premise ({where}) the model already "
                     f"prefers {lm_top!r} by {gap(prior_gap)} nats, so most of its LM lead is a-priori frequency, "
                     f"not evidence from the premise.")
    else:
        lines.append(f"Prior: {pmi_top!r} is not less likely a priori ({gap(-prior_gap)} nats ahead in the domain), "
                     f"so the premise itself favours {lm_top!r} by less than the raw scores suggest.")
    tok = result.tokens
    costly = tok[(tok["option"] == pmi_top) & (tok["condition"] == "premise")].nsmallest(2, "logprob")
    if len(costly):
        parts = ", ".join(f"{r.token!r} ({r.logprob:.2f})" for r in costly.itertuples())
        lines.append(f"The tokens that cost {pmi_top!r} most under the premise: {parts}.")
    return " ".join(lines)


def option_table(raw: pd.DataFrame, *, by: str | None = None) -> pd.DataFrame:
    """Complete raw option rows into a scorer table: lengths, every scorer's column and ``rank_<scorer>``.

    Args:
        raw: one row per option with ``option``, ``logprob`` (Σ log P(y|x)), ``n_tokens``, and each other
            condition's log-prob column (``domain_logprob``, ``null_logprob``, ...: NaN, or left out, where that
            condition was not scored); optionally ``n_chars`` / ``n_bytes``
            (the lengths per_char / per_byte divide by; default: of the whole option string); any other columns
            are kept, in front; a batch scorer's column (``Scorer.batch``) given with one item's rows is the score
            its run gave and is kept.
        by: column that groups the rows into items (ranks are taken within each group); None: one item.

    Returns:
        The table of ``MCResult.table`` (plus the extra columns). Scorer columns are computed on all rows at
        once, so a scorer's ``compute`` must work row by row, except a batch scorer's (it reads the ``by`` groups);
        a scorer that does not apply (``scorers.not_applicable``) is NaN.
    """
    t = with_raw_columns(raw, cuts=False)
    if "n_chars" not in t:
        t["n_chars"] = [len(o) for o in t["option"]]
    if "n_bytes" not in t:
        t["n_bytes"] = [len(o.encode("utf-8")) for o in t["option"]]
    for s in SCORERS.values():
        if s.column in LOGPROB_COLUMNS.values() or (s.batch and s.column in raw and by is None):
            continue  # a raw column (lm, unc), or a run's item's batch score: there already
        t[s.column] = np.nan if not_applicable(s, t) else s.compute(t)
    for s in SCORERS.values():
        col = t.groupby(by, sort=False)[s.column] if by is not None else t[s.column]
        t[f"rank_{s.name}"] = col.rank(ascending=False, method="min")
    # registry order; each condition's raw columns just before the first scorer that reads them
    order = [c for s in SCORERS.values()
             for c in (*(r for cond in ("premise", *s.needs) for r in RAW_COLUMNS[cond]), s.column)]
    first = list(dict.fromkeys(["option", *order, *(c for cols in RAW_COLUMNS.values() for c in cols)]))
    front = [c for c in raw.columns if c not in first]
    return t[front + first + [c for c in t.columns if c not in first and c not in front]]


def plan_table(plan: Plan, scores: Scores, task: int = 0, *, delimiter: str = "") -> pd.DataFrame:
    """One task's option table from a request plan's results (how ``evaluate`` reads its run).

    Args:
        plan, scores: a ``engine.requests.Plan`` and what its ``run`` returned.
        task: the task's position in the plan.
        delimiter: as in ``Plan.frame`` (the lengths leave it out).

    Returns:
        ``item``, ``option_index``, ``context``, then the columns of ``option_table`` (ranks within each
        item), then ``truncated`` / ``domain_truncated``.
    """
    return _with_cuts(plan.frame(scores, task, delimiter=delimiter), by="item")


def with_raw_columns(rows: pd.DataFrame, *, cuts: bool = True) -> pd.DataFrame:
    """A copy of raw option rows with every condition's log-prob column (NaN: not scored) and, with ``cuts``,
    truncation column (0) that they lack: rows read from a log, or saved before a condition existed, hold no scores
    under it."""
    t = rows.copy()
    for cond, column in LOGPROB_COLUMNS.items():
        if column not in t:
            t[column] = np.nan
        cut = CUT_COLUMNS.get(cond)
        if cuts and cut and cut not in t:
            t[cut] = 0
    return t


def item_table(rows: pd.DataFrame) -> pd.DataFrame:
    """One item's ``MCResult.table`` from its raw option rows (of ``Plan.frame`` or ``EvalResult.scores``).

    Args:
        rows: the item's rows, in option order, with the raw columns of ``Plan.frame`` (other columns are ignored:
            every registered scorer is computed anew, except that a batch scorer's column, which one item cannot
            give, is kept as its run computed it).

    Returns:
        ``option_table`` of the raw columns, then ``truncated`` / ``domain_truncated``.
    """
    batch = [s.column for s in SCORERS.values() if s.batch and s.column in rows]
    raw = ["option", *(c for cols in RAW_COLUMNS.values() for c in cols), *batch, *CUT_COLUMNS.values()]
    return _with_cuts(with_raw_columns(rows)[raw].reset_index(drop=True))


def _with_cuts(raw: pd.DataFrame, by: str | None = None) -> pd.DataFrame:
    """``option_table`` of raw rows with their truncation columns kept at the end."""
    cut = list(CUT_COLUMNS.values())
    raw = with_raw_columns(raw)
    table = option_table(raw.drop(columns=cut), by=by)
    table[cut] = raw[cut].to_numpy()
    return table


def _parse_item(i: int, item: Any) -> tuple[str, list[str], str | None, int | None]:
    """(premise, options, domain_premise, gold) of ``items[i]``, each checked."""
    if isinstance(item, (tuple, list)):
        if len(item) != 3:
            raise ValueError(f"items[{i}]: expected (premise, options, domain_premise)")
        premise, options, domain, gold = *item, None
    else:
        premise, options, domain = item.premise, item.options, item.domain_premise
        gold = getattr(item, "gold", None)
    if premise is None:
        raise TypeError(f"premise: expected a string, got None (item {i})")
    check_text(premise, "premise")
    if domain is not None:
        check_text(domain, "domain_premise")
    return premise, check_options(options), domain, gold


def _tokens(plan: Plan, scores: Scores, item: int) -> pd.DataFrame:
    """One row per scored token of every request of one item, with its ``option`` and ``condition``."""
    frames = []
    for r in plan.of(0, item):
        f = scores[r.key].frame()
        f.insert(0, "condition", r.key.condition)
        f.insert(0, "option", r.continuation)
        frames.append(f)
    return pd.concat(frames, ignore_index=True)


def score_items(
    lm: LM,
    items: Sequence[Any],
    *,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool = True,
    top_k: int = 0,
    chat_template: Any = None,
) -> list[MCResult]:
    """Score many items with ONE engine call (batching, deduplication and caching across items).

    Args:
        lm: a loaded ``LM``.
        items: (premise, options, domain_premise) triples, or objects with ``premise``, ``options``,
            ``domain_premise`` (and optionally ``gold``) attributes.
        top_k: also find the k most likely tokens at every scored position, in the same forward
            pass (``engine.logprobs(top_k=...)``); ``alternatives.token_view`` with the same k then
            needs no forward of its own.
        chat_template: render the premise and the domain premise alike through a chat template, as
            lm-evaluation-harness's ``--apply_chat_template`` does (``surfacelab.chat``): True for the
            tokenizer's own, a template's text, or a ``chat.ChatTemplate`` (a system instruction too);
            None: plain text. The options are scored as given, right after the rendered context.

    Returns:
        One ``MCResult`` per item. Under a chat template its ``premise`` / ``domain_premise`` are the
        rendered contexts (what the model read), ``meta["chat_template"]`` records the template and
        ``meta["chat_user"]`` the premise and domain premise as given.
    """
    template = chat.resolve(lm, chat_template)
    given = [_parse_item(i, it) for i, it in enumerate(items)]
    parsed = [(ctx, o, dom, g) for (p, o, d, g) in given for ctx, dom in [chat.contexts(lm, template, p, d)]]
    plan = Plan([[Entry((p,) * len(o), tuple(o), d) for p, o, d, _ in parsed]])
    scores = plan.run(lm, batch_size=batch_size, progress=progress, cache=cache, top_k=top_k)
    rows = dict(tuple(plan.frame(scores).groupby("item", sort=False)))
    out = []
    for i, ((premise, options, domain, gold), (typed, _, typed_domain, _)) in enumerate(zip(parsed, given)):
        more = {} if template is None else {"chat_template": template.meta(),
                                            "chat_user": {"premise": typed, "domain_premise": typed_domain}}
        out.append(MCResult(premise, options, domain, lm.name, item_table(rows[i]), _tokens(plan, scores, i), gold,
                            meta=result_meta(lm, engine=scores.stats, **more)))
    warn_truncation(pd.concat([r.table.assign(item=i) for i, r in enumerate(out)]), lm.max_length,
                    "the 'truncated' and 'domain_truncated' columns of MCResult.table")
    return out


def result_meta(lm: LM, **more: Any) -> dict[str, Any]:
    """What a result records of its model and run: ``fingerprint`` (model + tokenizer + dtype), ``backend``
    ("transformers", "vllm"), ``scorers`` (the registered scorers behind its columns) and ``more``
    (``engine``: the counters of the engine call; a template, a seed)."""
    return model_meta(lm, **{"scorers": list(SCORERS), **more})


def warn_truncation(rows: pd.DataFrame, window: int, where: str) -> None:
    """One warning per call when any context was cut to the model's window: the cuts of one item in detail
    (``truncation_note``), of several in counts (options, items, the most tokens, items whose options were cut by
    different amounts).

    Args:
        rows: option rows with ``item`` (what tells items apart), ``option`` and each condition's cut column
            (``CUT_COLUMNS``).
        window: the model's window, in tokens.
        where: the columns a person reads the cuts in.
    """
    cuts = with_raw_columns(rows)[list(CUT_COLUMNS.values())].to_numpy()
    hit = cuts.any(axis=1)
    if not hit.any():
        return
    n_items = rows["item"].nunique()
    if n_items == 1:
        msg = truncation_note(rows["option"], _cuts(rows))
    else:
        premise = rows[CUT_COLUMNS["premise"]].groupby(rows["item"])
        differs = int((premise.max() != premise.min()).sum())
        msg = (f"Truncated to fit the model's window of {window} tokens: the context of {int(hit.sum())} options "
               f"({rows.loc[hit, 'item'].nunique()} items) lost up to {int(cuts.max())} tokens from the "
               f"left; the options of {differs} items were cut by different amounts")
    warnings.warn(f"{msg.rstrip('.')} (window {window} tokens; see {where}).", stacklevel=4)


def score(
    lm: LM,
    premise: str,
    options: Sequence[str],
    *,
    domain_premise: str | None = None,
    gold: int | None = None,
    batch_size: int | str = "auto",
    cache: bool = True,
    top_k: int = 0,
    chat_template: Any = None,
) -> MCResult:
    """Score every option under the premise, the domain premise (if given) and an empty context.

    Args:
        lm: a loaded ``LM`` (see ``load_lm``).
        premise: the question/context; trailing whitespace moves onto the options.
        options: the candidate continuations, usually with a leading space (" bathtub").
        domain_premise: the domain premise for Unc and DC-PMI (e.g. " the answer is:").
        gold: index of the correct option, if known (marked in views).
        top_k: as in ``score_items``.
        chat_template: True (the tokenizer's own), a template's text or a ``chat.ChatTemplate``: the premise and
            the domain premise are rendered alike as chat turns (``score_items``); the result's ``premise`` and
            ``domain_premise`` are the rendered contexts. A tokenizer without a chat template asked for True is a
            ``ValueError`` naming ``chat_template``.

    Example:
        >>> r = score(lm, "The man took a bath in the", [" bathtub", " xylophone"], domain_premise=" the")
        >>> r.table[["option", "n_chars", "rank_lm"]].columns.tolist(), len(r.table)
        (['option', 'n_chars', 'rank_lm'], 2)
        >>> list(r.winners().index)  # every scorer picks one option (random tiny model: which one is noise)
        ['lm', 'avg', 'per_char', 'per_byte', 'unc', 'dcpmi', 'pmi_null']
    """
    result = score_items(lm, [(premise, options, domain_premise)], batch_size=batch_size, progress=False,
                         cache=cache, top_k=top_k, chat_template=chat_template)[0]
    read = result.premise  # the context the options follow (rendered, under a chat template)
    joined = [f"options[{i}] {o!r} reads '…{read.split()[-1]}{o}'" for i, o in enumerate(result.options)
              if glued(read, o)]
    if joined:
        warnings.warn(f"{'; '.join(joined)}: glued to the premise's last word (no space on either side). Start an "
                      "option with a space to score it as a new word; an option is read exactly as typed.",
                      UserWarning, stacklevel=2)
    if gold is not None:
        if not is_int(gold) or not 0 <= gold < len(result.options):
            raise ValueError(f"gold: expected an option index in [0, {len(result.options)}), got {gold!r}")
        result.gold = int(gold)
    return result

