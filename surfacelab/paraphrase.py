"""Paraphrase mass: concept sets, surface-form mass and concept-level scores.

A model spreads probability over every way of writing an answer. A **concept set** maps each
answer concept to its surface forms::

    {"bathtub": [" bathtub", " tub", " bath tub"], "sink": [" sink", " basin", " washbasin"]}

``mass()`` scores every form under the premise (and the domain premise) and sums each concept's
forms in probability space. Definitions (x = premise, x_dom = domain premise, f = a form, C = a
concept with forms f_1..f_n, all log-probs summed over the form's tokens, natural log):

=================  ==========================================================================
column             definition
=================  ==========================================================================
logprob            log P(f | x)
share_of_concept   P(f | x) / Σ_{f' in C} P(f' | x)
share_of_listed    P(f | x) / Σ over every listed form
dcpmi (form)       log P(f | x) − log P(f | x_dom)
log_mass           log Σ_{f in C} P(f | x)  (logsumexp of the form log-probs)
domain_log_mass    log Σ_{f in C} P(f | x_dom)
dcpmi (concept)    log_mass − domain_log_mass
=================  ==========================================================================

Winners (``MassResult.winners``), by key and by the name every view shows (``RULE_NAMES``): ``lm``,
"best single form", is the single most likely form and its concept (what a multiple-choice item
that happens to list that form would pick); ``mass``, "concept mass", the concept with the largest
summed mass; ``dcpmi``, "concept DC-PMI", the concept with the largest concept-mass DC-PMI; and
``dcpmi_form``, "form DC-PMI", the form with the largest form-level DC-PMI and its concept.

Caveat: a form's probability is the probability of its tokens, not of a finished word, so a form
whose tokens are a prefix of another listed form's tokens (" bath" and " bath tub") is counted
again inside the longer one. Such forms are named in the ``prefix_of`` column.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._checks import is_int
from ._results import JSONResult, read_json
from . import engine, text
from .engine.requests import Entry, Plan
from .mass_rules import WINNER_RULES, winner_sentences
from .safecsv import to_csv

if TYPE_CHECKING:
    from .models import LM

#: Default location of the teaching set (beside the package in a source checkout).
TEACHING_SET = Path(__file__).resolve().parent.parent / "data" / "teaching_set.json"


def _lse(x: Iterable[float]) -> float:
    """log Σ exp(x) in float64."""
    return float(np.logaddexp.reduce(np.asarray(list(x), dtype=np.float64)))


def check_concepts(concepts: Any, name: str = "concepts") -> dict[str, list[str]]:
    """Validate a concept set and return it as ``{concept: [forms]}``.

    Args:
        concepts: a mapping ``{name: [forms]}`` or a list of form lists (each concept is then named
            after its first form without surrounding whitespace, or ``concept 1``.. if those clash).
        name: the argument name used in error messages.

    Raises:
        TypeError: not a mapping/list, a non-string concept name or form, forms given as one string.
        ValueError: no concepts, an empty concept, an empty or whitespace-only form, a form listed
            twice (in one concept or in two).
    """
    if isinstance(concepts, Mapping):
        pairs = list(concepts.items())
    elif isinstance(concepts, Iterable) and not isinstance(concepts, (str, bytes)):
        groups = list(concepts)
        auto = [g[0].strip() if isinstance(g, Sequence) and not isinstance(g, str) and g
                and isinstance(g[0], str) else "" for g in groups]
        if any(not a for a in auto) or len(set(auto)) < len(auto):
            auto = [f"concept {i + 1}" for i in range(len(groups))]
        pairs = list(zip(auto, groups))
    else:
        raise TypeError(f"{name}: expected a dict {{concept: [forms]}} or a list of form lists, "
                        f"got {type(concepts).__name__}")
    if not pairs:
        raise ValueError(f"{name}: no concepts given")
    out: dict[str, list[str]] = {}
    owner: dict[str, str] = {}
    for cname, forms in pairs:
        if not isinstance(cname, str) or not cname:
            raise TypeError(f"{name}: concept names must be non-empty strings, got {cname!r}")
        where = f"{name}[{cname!r}]"
        if isinstance(forms, (str, bytes)) or not isinstance(forms, Iterable):
            raise TypeError(f"{where}: expected a list of surface forms, got {type(forms).__name__}")
        forms = list(forms)
        if not forms:
            raise ValueError(f"{where}: the concept has no surface forms")
        for i, f in enumerate(forms):
            text.check_text(f, f"{where}[{i}]", allow_empty=False)
            if not f.strip():
                raise ValueError(f"{where}[{i}]: a surface form must contain more than whitespace")
            if f in owner:
                other = owner[f]
                raise ValueError(f"{name}: form {f!r} is listed "
                                 + ("twice in concept " + repr(cname) if other == cname
                                    else f"in two concepts, {other!r} and {cname!r}"))
            owner[f] = cname
        out[cname] = forms
    return out


@dataclass
class MassResult(JSONResult):
    """Surface-form mass of one premise and concept set.

    Attributes:
        forms: one row per surface form (concept, form, logprob, prob, share_of_concept,
            share_of_listed, n_tokens, first_token, first_token_logprob, domain_logprob,
            domain_share_of_concept, dcpmi, prefix_of, flags).
        concepts: one row per concept (concept, n_forms, log_mass, mass, share, domain_log_mass,
            domain_share, dcpmi, best_form, best_form_logprob, best_form_share, rank_lm,
            rank_mass, rank_dcpmi, is_answer).
        winners: one row per rule of ``WINNER_RULES`` that can be computed (scorer, concept,
            form, score, runner_up, margin, tie, correct).
        topk: the model's own top-k next tokens after the premise (rank, token, token_id,
            logprob, prob, cum_prob, listed, concepts).
        coverage: where the mass went: ``listed_mass`` (Σ P(f|x) over listed forms),
            ``first_token_mass`` (next-token probability of the distinct first tokens of the
            listed forms), ``topk_mass`` and ``rest`` (1 − first_token_mass: next-token mass that
            starts no listed form).
    """

    premise: str
    domain_premise: str | None
    model: str
    forms: pd.DataFrame
    concepts: pd.DataFrame
    winners: pd.DataFrame
    topk: pd.DataFrame
    coverage: dict[str, float]
    answer: str | None = None
    meta: dict = field(default_factory=dict)

    def winner(self, scorer: str = "mass") -> str:
        """The winning concept under ``scorer`` (a key of ``WINNER_RULES``)."""
        if scorer not in WINNER_RULES:
            raise ValueError(f"scorer: unknown rule {scorer!r}; known: {', '.join(WINNER_RULES)}")
        row = self.winners[self.winners["scorer"] == scorer]
        if row.empty:
            raise ValueError(f"scorer: {scorer!r} needs a domain premise, and this result has none")
        return str(row["concept"].iloc[0])

    def explain(self) -> str:
        """Plain words on which form or concept wins under each rule and why, and where the rest of the mass went."""
        lines = winner_sentences(self.concepts, self.winners, self.answer)
        cov = self.coverage
        lines.append(f"The listed forms start with tokens that take {cov['first_token_mass']:.1%} of the "
                     f"next-token mass; {cov['rest']:.1%} went to other continuations")
        if len(self.topk):
            top = self.topk.iloc[0]
            lines[-1] += f" (the model's top next token is {top['token']!r}, P = {top['prob']:.1%})"
        lines[-1] += "."
        return " ".join(lines)

    def show(self) -> Any:
        """The paraphrase-mass figure (``viz.paraphrase_mass``)."""
        from . import viz

        return viz.paraphrase_mass(self.forms, self.concepts, self.winners, answer=self.answer)

    def save(self, path: str | Path) -> Path:
        """Write ``.concepts`` as CSV (``*.csv``) or every field and frame as JSON (``*.json``, ``MassResult.load``)."""
        path = Path(path)
        if path.suffix == ".csv":
            to_csv(self.concepts, path)
            return path
        return super().save(path)

    def _repr_html_(self) -> str:
        return self.concepts.to_html(index=False, float_format=lambda v: f"{v:.3f}")


def _parse_item(it: Any, i: int) -> tuple[str, dict[str, list[str]], str | None, str | None]:
    if isinstance(it, Mapping):
        missing = [k for k in ("premise", "concepts") if k not in it]
        if missing:
            raise ValueError(f"items[{i}]: missing key(s) {missing}")
        premise, concepts, domain, answer = it["premise"], it["concepts"], it.get("domain_premise"), it.get("answer")
    elif isinstance(it, (tuple, list)) and len(it) == 3:
        (premise, concepts, domain), answer = it, None
    else:
        raise TypeError(f"items[{i}]: expected a dict with premise/concepts or a (premise, concepts, "
                        f"domain_premise) triple")
    text.check_text(premise, "premise")
    if domain is not None:
        text.check_text(domain, "domain_premise")
    concepts = check_concepts(concepts)
    if answer is not None and answer not in concepts:
        raise ValueError(f"answer: {answer!r} is not one of the concepts {list(concepts)}")
    return premise, concepts, domain, answer


def _forms_frame(concepts: dict[str, list[str]], prem: list[engine.Scored],
                 dom: list[engine.Scored] | None) -> pd.DataFrame:
    rows = []
    ids = [s.encoding.scored_ids for s in prem]
    seen: dict[tuple[int, ...], str] = {}
    for s, t in zip(prem, ids):
        if t in seen:
            raise ValueError(f"concepts: forms {seen[t]!r} and {s.request[1]!r} encode to the same tokens "
                             f"after the premise; list only one of them")
        seen[t] = s.request[1]
    forms = [(c, f) for c, fs in concepts.items() for f in fs]
    for k, ((concept, form), s) in enumerate(zip(forms, prem)):
        mine = ids[k]
        longer = [forms[j][1] for j, t in enumerate(ids) if len(t) > len(mine) and t[:len(mine)] == mine]
        rows.append({
            "concept": concept, "form": form, "logprob": s.total, "n_tokens": s.n_tokens, "n_chars": len(form),
            "first_token": s.tokens[0], "first_token_id": int(s.encoding.scored_ids[0]),
            "first_token_logprob": float(s.logprob[0]),
            "domain_logprob": dom[k].total if dom is not None else float("nan"),
            "prefix_of": ", ".join(repr(f) for f in longer),
            "flags": ",".join(sorted({f for f in s.flags if f})),
        })
    t = pd.DataFrame(rows)
    t["prob"] = np.exp(t["logprob"])
    total = _lse(t["logprob"])
    t["share_of_listed"] = np.exp(t["logprob"] - total)
    t["share_of_concept"] = np.exp(t["logprob"] - t.groupby("concept", sort=False)["logprob"].transform(_lse))
    t["domain_share_of_concept"] = (np.exp(t["domain_logprob"] - t.groupby("concept", sort=False)["domain_logprob"]
                                           .transform(_lse)) if dom is not None else np.nan)
    t["dcpmi"] = t["logprob"] - t["domain_logprob"]
    order = ["concept", "form", "logprob", "prob", "share_of_concept", "share_of_listed", "n_tokens", "n_chars",
             "first_token", "first_token_id", "first_token_logprob", "domain_logprob", "domain_share_of_concept",
             "dcpmi", "prefix_of", "flags"]
    return t[order]


def _concepts_frame(forms: pd.DataFrame, has_domain: bool, answer: str | None) -> pd.DataFrame:
    rows = []
    total = _lse(forms["logprob"])
    dtotal = _lse(forms["domain_logprob"]) if has_domain else float("nan")
    for concept, g in forms.groupby("concept", sort=False):
        log_mass = _lse(g["logprob"])
        dlm = _lse(g["domain_logprob"]) if has_domain else float("nan")
        best = g.loc[g["logprob"].idxmax()]
        rows.append({
            "concept": concept, "n_forms": len(g), "log_mass": log_mass, "mass": float(np.exp(log_mass)),
            "share": float(np.exp(log_mass - total)), "domain_log_mass": dlm,
            "domain_share": float(np.exp(dlm - dtotal)) if has_domain else float("nan"),
            "dcpmi": log_mass - dlm, "best_form": best["form"], "best_form_logprob": float(best["logprob"]),
            "best_form_share": float(best["share_of_concept"]),
            "best_dcpmi_form": g.loc[g["dcpmi"].idxmax(), "form"] if has_domain else None,
            "best_form_dcpmi": float(g["dcpmi"].max()) if has_domain else float("nan"),
        })
    t = pd.DataFrame(rows)
    for rule, col in (("lm", "best_form_logprob"), ("mass", "log_mass"), ("dcpmi", "dcpmi")):
        t[f"rank_{rule}"] = t[col].rank(ascending=False, method="min")
    t["is_answer"] = t["concept"] == answer if answer is not None else False
    return t


def _winners_frame(concepts: pd.DataFrame, has_domain: bool, answer: str | None) -> pd.DataFrame:
    rules = [("lm", "best_form_logprob", "best_form"), ("mass", "log_mass", None)]
    if has_domain:
        rules += [("dcpmi", "dcpmi", None), ("dcpmi_form", "best_form_dcpmi", "best_dcpmi_form")]
    rows = []
    for rule, col, form_col in rules:
        ranked = concepts.sort_values(col, ascending=False, kind="stable")
        top = ranked.iloc[0]
        second = ranked.iloc[1] if len(ranked) > 1 else None
        margin = float(top[col] - second[col]) if second is not None else float("nan")
        rows.append({
            "scorer": rule, "concept": top["concept"], "form": top[form_col] if form_col else None,
            "score": float(top[col]), "runner_up": second["concept"] if second is not None else None,
            "margin": margin, "tie": margin == 0.0,
            "correct": (top["concept"] == answer) if answer is not None else None,
        })
    return pd.DataFrame(rows)


def _topk_frame(lm: LM, top_ids: np.ndarray, top_logprobs: np.ndarray, forms: pd.DataFrame) -> pd.DataFrame:
    starts = forms.groupby("first_token_id", sort=False)["concept"].agg(lambda s: ", ".join(dict.fromkeys(s)))
    lp = top_logprobs.astype(np.float64)
    return pd.DataFrame({
        "rank": np.arange(1, len(lp) + 1), "token": [lm.tokenizer.decode([int(t)]) for t in top_ids],
        "token_id": top_ids.astype(np.int64), "logprob": lp, "prob": np.exp(lp), "cum_prob": np.cumsum(np.exp(lp)),
        "listed": [int(t) in starts.index for t in top_ids],
        "concepts": [starts.get(int(t), "") for t in top_ids],
    })


def mass_items(
    lm: LM,
    items: Sequence[Any],
    *,
    top_k: int = 10,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool = True,
) -> list[MassResult]:
    """Surface-form mass of many items with ONE ``engine.logprobs`` call.

    The model's own next tokens after a premise (``.topk``, and the first-token mass in
    ``.coverage``) are read at the first scored position of a form whose premise tokens are the
    premise's tokens alone, from the same pass; a premise without such a form (every form merges
    with it) gets one next-token pass of its own.

    Args:
        lm: a loaded ``LM``.
        items: dicts with ``premise``, ``concepts`` and optionally ``domain_premise`` and ``answer``
            (the format of ``load_teaching_set()``), or (premise, concepts, domain_premise) triples.
        top_k: how many of the model's own next tokens to list in ``.topk`` (0 for none).

    Returns:
        One ``MassResult`` per item.
    """
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise TypeError("items: expected a list of items")
    parsed = [_parse_item(it, i) for i, it in enumerate(items)]
    if not is_int(top_k) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0, got {top_k!r}")
    forms_of = [tuple(f for fs in concepts.values() for f in fs) for _, concepts, _, _ in parsed]
    plan = Plan([[Entry((premise,) * len(forms), forms, domain)
                  for (premise, _, domain, _), forms in zip(parsed, forms_of)]], ["premise", "domain"])
    scores = plan.run(lm, batch_size=batch_size, progress=progress, cache=cache, top_k=top_k)
    prompts = [text.move_whitespace(p, "")[0] for p, *_ in parsed]
    prem_of = [(plan.results(scores, i), plan.results(scores, i, "domain") if domain is not None else None)
               for i, (_, _, domain, _) in enumerate(parsed)]
    # a form whose context tokens are the prompt's own tokens shows the next-token distribution
    clean = []
    for prompt, (prem, _) in zip(prompts, prem_of):
        ids = text.encode_prompt(lm, prompt)
        clean.append([s for s in prem if s.encoding.input_ids[:s.encoding.start] == ids])
    unmerged = [{int(s.encoding.scored_ids[0]) for s in prem if not s.encoding.merged} for prem, _ in prem_of]
    own = [i for i, c in enumerate(clean)
           if (top_k and not c) or not unmerged[i] <= {int(s.encoding.scored_ids[0]) for s in c}]
    first_ids = sorted(set().union(*(unmerged[i] for i in own)))
    nexts = dict(zip(own, engine.next_token_logprobs(lm, [prompts[i] for i in own], token_ids=first_ids,
                                                      top_k=top_k, batch_size=batch_size)))
    column = {t: j for j, t in enumerate(first_ids)}
    out = []
    for i, ((premise, concepts, domain, answer), (prem, dom)) in enumerate(zip(parsed, prem_of)):
        forms = _forms_frame(concepts, prem, dom)
        table = _concepts_frame(forms, domain is not None, answer)
        if i in nexts:
            nt = nexts[i]
            first_mass = float(np.exp(nt.selected[[column[t] for t in unmerged[i]]].astype(np.float64)).sum())
            top_ids, top_lp = nt.top_ids, nt.top_logprobs
        else:
            first_lp = {int(s.encoding.scored_ids[0]): float(s.logprob[0]) for s in clean[i]}
            first_mass = float(np.exp([first_lp[t] for t in unmerged[i]]).sum())
            top_ids, top_lp = ((clean[i][0].top_ids[0], clean[i][0].top_logprobs[0]) if top_k
                               else (np.zeros(0, np.int64), np.zeros(0, np.float32)))
        topk = _topk_frame(lm, top_ids, top_lp, forms)
        coverage = {"listed_mass": float(np.exp(_lse(forms["logprob"]))), "first_token_mass": first_mass,
                    "topk_mass": float(topk["prob"].sum()), "rest": 1.0 - first_mass}
        out.append(MassResult(premise, domain, lm.name, forms, table, _winners_frame(table, domain is not None, answer),
                              topk, coverage, answer))
    return out


def mass(
    lm: LM,
    premise: str,
    concepts: Any,
    *,
    domain_premise: str | None = None,
    answer: str | None = None,
    top_k: int = 10,
    batch_size: int | str = "auto",
    cache: bool = True,
) -> MassResult:
    """Score every surface form of every concept and sum each concept's mass.

    Args:
        lm: a loaded ``LM`` (see ``load_lm``).
        premise: the context; trailing whitespace moves onto the forms.
        concepts: ``{concept: [forms]}`` (or a list of form lists), forms usually with a leading space.
        domain_premise: short generic context ending like the premise, for the DC-PMI columns.
        answer: the intended concept, if known (fills ``winners.correct``).
        top_k: how many of the model's own next tokens to list in ``.topk``.

    Example:
        >>> r = mass(lm, "The man took a bath in the",
        ...          {"bathtub": [" bathtub", " tub", " bath tub"], "sink": [" sink", " basin", " washbasin"]},
        ...          domain_premise="in the")
        >>> r.concepts[["concept", "log_mass", "share", "best_form", "dcpmi"]].concept.tolist()
        ['bathtub', 'sink']
    """
    item = {"premise": premise, "concepts": concepts, "domain_premise": domain_premise, "answer": answer}
    return mass_items(lm, [item], top_k=top_k, batch_size=batch_size, progress=False, cache=cache)[0]


def winners_table(results: Sequence[MassResult], ids: Sequence[str] | None = None) -> pd.DataFrame:
    """One row per result: the winning concept under each rule and whether it is the answer.

    Columns: id, premise, answer, answer_share (the answer's share of the listed mass),
    answer_best_form_share (the share of the answer's own mass held by its best form),
    first_token_mass, then ``<rule>`` and
    ``<rule>_correct`` for every rule of ``WINNER_RULES`` (NaN where a rule needs a domain premise).
    """
    if ids is not None and len(ids) != len(results):
        raise ValueError(f"ids: expected {len(results)} ids, got {len(ids)}")
    rows = []
    for i, r in enumerate(results):
        if not isinstance(r, MassResult):
            raise TypeError(f"results[{i}]: expected a MassResult, got {type(r).__name__}")
        c = r.concepts.set_index("concept")
        row = {"id": ids[i] if ids is not None else str(i), "premise": r.premise, "answer": r.answer,
               "answer_share": float(c.loc[r.answer, "share"]) if r.answer is not None else float("nan"),
               "answer_best_form_share": (float(c.loc[r.answer, "best_form_share"]) if r.answer is not None
                                          else float("nan")),
               "first_token_mass": r.coverage["first_token_mass"]}
        w = r.winners.set_index("scorer")
        for rule in WINNER_RULES:
            row[rule] = w.loc[rule, "concept"] if rule in w.index else None
            row[f"{rule}_correct"] = w.loc[rule, "correct"] if rule in w.index else None
        rows.append(row)
    return pd.DataFrame(rows)


# --- teaching set ------------------------------------------------------------------------------

def load_teaching_set(path: str | Path | None = None) -> list[dict[str, Any]]:
    """Load and validate a teaching set (default: the packaged ``data/teaching_set.json``).

    Every item needs a unique ``id``, a ``premise`` and a ``domain_premise`` (strings that do not
    end in whitespace), ``concepts`` (at least two, each with at least three distinct forms that
    start with whitespace, no form in two concepts) and an ``answer`` that is one of the concepts.

    Returns:
        The items as dicts (id, premise, domain_premise, concepts, answer, and note and lesson where given),
        ready for ``mass_items``.
    """
    p = Path(TEACHING_SET if path is None else path)
    doc = read_json(p, "teaching set")
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError(f"path: {p.name} needs a non-empty 'items' list")
    out, ids = [], set()
    for i, it in enumerate(items):
        where = f"{p.name}: items[{i}]"
        if not isinstance(it, dict):
            raise ValueError(f"{where}: expected an object")
        missing = [k for k in ("id", "premise", "domain_premise", "concepts", "answer") if k not in it]
        if missing:
            raise ValueError(f"{where}: missing key(s) {missing}")
        where = f"{where} ({it['id']!r})"
        if not isinstance(it["id"], str) or it["id"] in ids:
            raise ValueError(f"{where}: ids must be unique strings")
        ids.add(it["id"])
        for key in ("premise", "domain_premise"):
            value = text.check_text(it[key], f"{where}: {key}", allow_empty=False)
            if value != value.rstrip():
                raise ValueError(f"{where}: {key} must not end in whitespace (put the space on the forms)")
        concepts = check_concepts(it["concepts"], f"{where}: concepts")
        if not isinstance(it["concepts"], dict) or len(concepts) < 2:
            raise ValueError(f"{where}: concepts must be an object with at least two concepts")
        for c, forms in concepts.items():
            if len(forms) < 3:
                raise ValueError(f"{where}: concept {c!r} has {len(forms)} forms; at least 3 are needed")
            bare = [f for f in forms if not f[:1].isspace()]
            if bare:
                raise ValueError(f"{where}: forms of {c!r} must start with a space: {bare}")
        if it["answer"] not in concepts:
            raise ValueError(f"{where}: answer {it['answer']!r} is not one of the concepts {list(concepts)}")
        out.append({k: it[k] for k in ("id", "premise", "domain_premise", "concepts", "answer", "note", "lesson")
                    if k in it})
    return out
