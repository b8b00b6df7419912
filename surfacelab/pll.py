"""Masked-LM pseudo-log-likelihood (PLL), subword by subword.

Three metrics (Salazar et al. 2020; Kauf & Ivanova 2023), each the sum over a sentence's tokens of
``log P(token | the sentence with some tokens masked)``:

- ``original``: mask only the scored token. It over-rewards words split into several subwords
  ("so ##uven ##ir"): the other pieces of the word give each piece away.
- ``word_l2r`` (the default; minicons' ``within_word_l2r``): also mask the later subwords of the
  same word, so a word is predicted left to right without seeing its own future pieces.
- ``whole_word``: mask every subword of the word; one masked copy scores all of the word's pieces.

Words are the fast tokenizer's ``word_ids()`` (its pre-tokenizer's words: for BERT, punctuation is
a word of its own, so "didn't" is the three words "didn", "'", "t"). Special tokens are never
scored. This module only builds the masked copies and reads their scores: the copies run through
``engine.masked_logprobs`` (deduplicated, cached on disk like causal scores, cancellable with
``engine.cancelled_when`` between batches) on the masked backend (``backends.masked``): batches bounded
by ``batch_size`` rows or, with "auto", by a token budget, so memory is bounded by the batch and not by
the sentence length; one length per batch, so nothing is padded; the vocabulary head only at the
scored positions; the log-softmax in float32.

Window: a sentence (with its prefix and special tokens) longer than ``mlm.max_length`` raises
``ValueError``; it is not truncated, because the PLL of a truncated sentence scores another text.

Example:
    >>> res = pll(mlm, ["I bought a souvenir."], metric="word_l2r")
    >>> res.table[["sentence", "pll", "n_tokens"]].sentence.tolist()
    ['I bought a souvenir.']
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd

from . import engine, models, text
from ._results import JSONResult, macro_ci, model_meta
from .engine.cache import ScoreCache
from .registry import Registry
from .tasks.blimp import load_blimp

Copies = list[tuple[tuple[int, ...], tuple[int, ...]]]
#: What ``pll`` accepts as its model: a loaded ``MLM``, or what ``load_mlm`` loads (preset, folder, hub id, pair).
MLMSource = models.MLM | str | os.PathLike | tuple[Any, Any]


@dataclass(frozen=True)
class PLLMetric:
    """A way to mask a sentence for PLL.

    ``copies(words)`` gets the sentence's scored input positions grouped by word (a list of position
    lists, words and positions in order) and returns its masked copies, each ``(masked positions,
    scored positions)``; every scored position must be scored by exactly one copy.
    """

    name: str
    copies: Callable[[list[list[int]]], Copies]
    description: str


#: Every PLL metric, in default order (``register_pll_metric`` adds to it).
METRICS: Registry[PLLMetric] = Registry("PLL metric", argument="metric")
_ALIASES = {"within_word_l2r": "word_l2r"}  # minicons' name


def register_pll_metric(metric: PLLMetric, *, overwrite: bool = False) -> PLLMetric:
    """Add a PLL metric (``pll(..., metric=name)``, ``pll_metrics``, ``pll_blimp``); a taken name needs
    ``overwrite``."""
    if not isinstance(metric, PLLMetric):
        raise TypeError(f"metric: expected a PLLMetric, got {type(metric).__name__}")
    return METRICS.register(metric.name, metric, overwrite=overwrite)


for _m in [
    PLLMetric("original", lambda words: [((p,), (p,)) for w in words for p in w], "mask only the scored token"),
    PLLMetric("word_l2r", lambda words: [(tuple(w[k:]), (w[k],)) for w in words for k in range(len(w))],
              "also mask the later subwords of the same word (minicons' within_word_l2r)"),
    PLLMetric("whole_word", lambda words: [(tuple(w), tuple(w)) for w in words],
              "mask every subword of the word; one copy scores all of its pieces"),
]:
    register_pll_metric(_m)



@dataclass
class PLLResult(JSONResult):
    """Pseudo-log-likelihoods of a list of sentences under one metric.

    Attributes:
        metric: "original", "word_l2r" or "whole_word".
        model: the model's name; ``note`` its label (non-empty when the MLM head is not a
            faithful masked LM, e.g. splade-tiny's retrieval head: show it with every number).
        table: one row per sentence: ``sentence_idx``, ``sentence``, ``prefix``, ``pll`` (sum of
            the token log-probs), ``n_tokens``, ``n_words``, ``word_pll`` (per-word sums, a list).
        tokens: one row per scored token: ``sentence_idx``, ``sentence``, ``word_idx``, ``word``,
            ``subword``, ``subword_idx`` (index within its word), ``n_subwords``, ``position``
            (index in the model input, special tokens included), ``token_id``, ``char_start`` /
            ``char_end`` (in ``sentence``), ``masked`` (the input positions masked for this score,
            a tuple), ``logprob`` (float32 log-softmax, as float64) and ``rank`` (1 = top choice).
        words: one row per word: ``sentence_idx``, ``word_idx``, ``word``, ``n_subwords``,
            ``char_start``, ``char_end``, ``pll``.
        stats: ``copies`` (the distinct masked copies scored, from the disk cache or a forward), and the
            forwards this call ran (0 where the cache answered): ``batches``, ``max_rows`` and ``max_tokens``
            (the largest batch: rows, and rows x length), ``tokens_forwarded``.
    """

    metric: str
    model: str
    note: str
    table: pd.DataFrame
    tokens: pd.DataFrame
    words: pd.DataFrame
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def scores(self) -> np.ndarray:
        """The per-sentence PLLs, in input order."""
        return self.table["pll"].to_numpy()

    def show(self) -> Any:
        """The PLL-by-subword figure (``viz.pll_subwords``), with the model's note."""
        from . import viz

        return viz.pll_subwords(self.tokens.assign(metric=self.metric), note=self.note)

    def __repr__(self) -> str:
        label = f", note={self.note!r}" if self.note else ""
        return f"PLLResult(metric={self.metric!r}, model={self.model!r}, sentences={len(self.table)}{label})"


@dataclass
class _Sentence:
    """One encoded (prefix, sentence): input ids and the scored tokens' word structure."""

    ids: list[int]
    scored: list[int]  # input positions scored, in order
    word_of: list[int]  # word index (within the sentence) of each scored position
    spans: list[tuple[int, int]]  # char span in the sentence of each scored position


def _check_metric(metric: Any) -> str:
    return METRICS[_ALIASES.get(metric, metric) if isinstance(metric, str) else metric].name


def _check_sentences(sentences: Any, prefix: Any) -> tuple[list[str], list[str]]:
    if isinstance(sentences, str):
        sentences = [sentences]
    if not isinstance(sentences, Sequence):
        raise TypeError(f"sentences: expected a list of strings, got {type(sentences).__name__}")
    if len(sentences) == 0:
        raise ValueError("sentences: must not be empty")
    sents = [text.check_text(s, f"sentences[{i}]", allow_empty=False) for i, s in enumerate(sentences)]
    for i, s in enumerate(sents):
        if not s.strip():
            raise ValueError(f"sentences[{i}]: must not be blank")
    if prefix is None or isinstance(prefix, str):
        prefixes = [text.check_text(prefix or "", "prefix")] * len(sents)
    elif isinstance(prefix, Sequence):
        if len(prefix) != len(sents):
            raise ValueError(f"prefix: expected {len(sents)} prefixes (one per sentence), got {len(prefix)}")
        prefixes = [text.check_text(p, f"prefix[{i}]") for i, p in enumerate(prefix)]
    else:
        raise TypeError(f"prefix: expected None, a string or a list of strings, got {type(prefix).__name__}")
    return sents, prefixes


def _joined(prefix: str, sentence: str) -> tuple[str, int]:
    """``prefix`` and ``sentence`` joined by one space (none where either side has whitespace)."""
    sep = "" if not prefix or prefix[-1].isspace() or sentence[0].isspace() else " "
    return prefix + sep + sentence, len(prefix) + len(sep)


def _encode(mlm: models.MLM, sentence: str, prefix: str, idx: int) -> _Sentence:
    full, start = _joined(prefix, sentence)
    enc = mlm.tokenizer(full, add_special_tokens=True, return_offsets_mapping=True)
    ids, offsets, word_ids = list(enc["input_ids"]), enc["offset_mapping"], enc.word_ids()
    if len(ids) > mlm.max_length:
        raise ValueError(f"sentences[{idx}]: {len(ids)} tokens (with prefix and special tokens) exceed the "
                         f"model's window of {mlm.max_length}; split the text (PLL does not truncate)")
    special = set(mlm.tokenizer.all_special_ids) - {mlm.tokenizer.unk_token_id}  # [UNK] is a real word
    scored, words, spans = [], [], []
    first_word: dict[int, int] = {}
    for pos, (tid, wid, (s, e)) in enumerate(zip(ids, word_ids, offsets)):
        if wid is None or tid in special or s < start:
            continue
        first_word.setdefault(wid, len(first_word))
        scored.append(pos)
        words.append(first_word[wid])
        spans.append((s - start, e - start))
    if not scored:
        raise ValueError(f"sentences[{idx}]: {sentence!r} encodes to no scorable tokens")
    return _Sentence(ids, scored, words, spans)


def _copies(sent: _Sentence, metric: str) -> Copies:
    """(masked positions, scored positions) of every masked copy of one sentence."""
    groups: dict[int, list[int]] = {}
    for pos, w in zip(sent.scored, sent.word_of):
        groups.setdefault(w, []).append(pos)
    return METRICS[metric].copies(list(groups.values()))


def _as_mlm(mlm: MLMSource) -> models.MLM:
    if isinstance(mlm, models.LM):
        raise TypeError("mlm: expected a masked LM (load_mlm), got a causal LM")
    try:
        return models.load_mlm(mlm)
    except (TypeError, ValueError) as err:
        raise type(err)(f"mlm: {err}") from err


def pll(
    mlm: MLMSource,
    sentences: Sequence[str] | str,
    *,
    metric: str = "word_l2r",
    batch_size: int | str = "auto",
    prefix: Sequence[str] | str | None = None,
    progress: bool = True,
    cache: bool | ScoreCache = True,
) -> PLLResult:
    """Pseudo-log-likelihood of each sentence under a masked LM, subword by subword.

    Args:
        mlm: a loaded ``MLM``, or anything ``load_mlm`` accepts (preset, folder, hub id, pair).
        sentences: the texts to score (a single string is one sentence).
        metric: "original", "word_l2r" (default; alias "within_word_l2r") or "whole_word".
        batch_size: masked copies per batch, or "auto" (a token budget per batch; halves on OOM).
        prefix: conditional scoring: a prefix per sentence (or one for all) joined to it by a
            space; the prefix is visible context and is never masked or scored.
        progress: show a ``tqdm.auto`` bar for long runs.
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False), as in
            ``engine.logprobs``: a masked copy scored before under the same weights is not run again.

    Returns:
        A ``PLLResult`` (``.table`` per sentence, ``.tokens`` per subword, ``.words`` per word).

    Example:
        >>> r = pll(mlm, ["The souvenir was cheap.", "The cat sat on the mat."])
        >>> len(r.table), bool((r.table.pll < 0).all())
        (2, True)
    """
    return pll_metrics(mlm, sentences, [metric], batch_size=batch_size, prefix=prefix,
                       progress=progress, cache=cache)[_check_metric(metric)]


def _check_metrics(metrics: Any) -> tuple[str, ...]:
    if metrics is METRICS:
        metrics = list(METRICS)
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence):
        raise TypeError(f"metrics: expected a list of metric names, got {type(metrics).__name__}")
    out = tuple(dict.fromkeys(_check_metric(m) for m in metrics))
    if not out:
        raise ValueError("metrics: must not be empty")
    return out


def pll_metrics(
    mlm: MLMSource,
    sentences: Sequence[str] | str,
    metrics: Sequence[str] | str = METRICS,
    *,
    batch_size: int | str = "auto",
    prefix: Sequence[str] | str | None = None,
    progress: bool = True,
    cache: bool | ScoreCache = True,
) -> dict[str, PLLResult]:
    """``pll`` under several metrics at once: a masked copy shared by metrics runs once.

    A word of one subword is masked the same way by all three metrics, and word_l2r's first
    subword is whole_word's copy, so scoring the metrics together runs far fewer copies than
    scoring them one by one. The numbers are those of ``pll`` for each metric.

    Args:
        mlm, sentences, batch_size, prefix, progress, cache: as in ``pll``.
        metrics: metric names (default all three).

    Returns:
        One ``PLLResult`` per metric, by name; their ``stats`` are those of the shared run.
    """
    metrics = _check_metrics(metrics)
    engine.check_batch_size(batch_size)  # a bad batch_size fails before a model loads
    sents, prefixes = _check_sentences(sentences, prefix)
    mlm = _as_mlm(mlm)
    unique: dict[tuple[str, str], int] = {}
    first: list[int] = []  # input index of each unique (prefix, sentence)
    for i, key in enumerate(zip(prefixes, sents)):
        if key not in unique:
            unique[key] = len(unique)
            first.append(i)
    encoded = [_encode(mlm, sents[i], prefixes[i], i) for i in first]
    per_metric = {m: [(u, masked, scored) for u, e in enumerate(encoded) for masked, scored in _copies(e, m)]
                  for m in metrics}
    shared: dict[tuple[int, tuple], set[int]] = {}  # (sentence, masked positions) -> positions scored
    for copies in per_metric.values():
        for u, masked, scored in copies:
            shared.setdefault((u, masked), set()).update(scored)
    runs = [(u, masked, tuple(sorted(scored))) for (u, masked), scored in shared.items()]
    ids = [tuple(e.ids) for e in encoded]
    scores = engine.masked_logprobs(mlm, [engine.MaskedCopy(ids[u], masked, scored) for u, masked, scored in runs],
                                    batch_size=batch_size, progress=progress, cache=cache)
    logprob = np.concatenate([s.logprob for s in scores])
    rank = np.concatenate([s.rank for s in scores])
    st = scores.stats
    stats = {"copies": st.requests, "batches": st.batches, "max_rows": st.max_rows, "max_tokens": st.max_tokens,
             "tokens_forwarded": st.tokens_forwarded}
    slot: dict[tuple[int, tuple, int], int] = {}
    k = 0
    for u, masked, scored in runs:
        for pos in scored:
            slot[(u, masked, pos)] = k
            k += 1
    which = [unique[key] for key in zip(prefixes, sents)]
    out = {}
    for m, copies in per_metric.items():
        take = np.array([slot[(u, masked, pos)] for u, masked, scored in copies for pos in scored])
        frames = _frames(mlm, encoded, copies, logprob[take], rank[take], sents, prefixes,
                         [sents[i] for i in first], which)
        out[m] = PLLResult(m, mlm.name, mlm.note, *frames, stats=stats)
    return out


def _frames(mlm: models.MLM, encoded: list[_Sentence], copies: list[tuple[int, tuple, tuple]], logprob: np.ndarray,
            rank: np.ndarray, sents: list[str], prefixes: list[str], texts: list[str], which: list[int]
            ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Build (table, tokens, words) for the input sentences from the unique sentences' scores."""
    # slots (one per scored token) come per unique sentence, in position order, as ``e.scored``
    masked = [m for _, m, scored in copies for _ in scored]
    word_idx, word, subword, sub_idx, n_sub, cs, ce, position, token_id = ([] for _ in range(9))
    w_start, w_u = [], []  # first slot of every (unique sentence, word), its unique sentence
    for u, e in enumerate(encoded):
        s = texts[u]
        toks = mlm.tokenizer.convert_ids_to_tokens([e.ids[p] for p in e.scored])
        bounds = [j for j in range(len(e.scored)) if j == 0 or e.word_of[j] != e.word_of[j - 1]] + [len(e.scored)]
        for a, b in zip(bounds[:-1], bounds[1:]):
            w_start.append(len(position) + a)
            w_u.append(u)
            span = (e.spans[a][0], e.spans[b - 1][1])
            for j in range(a, b):
                word_idx.append(e.word_of[j])
                word.append(s[span[0]:span[1]])
                sub_idx.append(j - a)
                n_sub.append(b - a)
        subword += toks
        cs += [x for x, _ in e.spans]
        ce += [y for _, y in e.spans]
        position += e.scored
        token_id += [e.ids[p] for p in e.scored]
    n_slots = np.array([len(e.scored) for e in encoded])
    u_start = np.concatenate([[0], np.cumsum(n_slots)])
    lp64 = logprob.astype(np.float64)
    cols = {"word_idx": np.array(word_idx), "word": np.array(word, dtype=object),
            "subword": np.array(subword, dtype=object), "subword_idx": np.array(sub_idx),
            "n_subwords": np.array(n_sub), "position": np.array(position), "token_id": np.array(token_id),
            "char_start": np.array(cs), "char_end": np.array(ce), "masked": _objects(masked),
            "logprob": lp64, "rank": rank}
    which_arr = np.array(which)
    take = np.concatenate([np.arange(u_start[u], u_start[u + 1]) for u in which])
    counts = n_slots[which_arr]
    tokens = pd.DataFrame({"sentence_idx": np.repeat(np.arange(len(which)), counts),
                           "sentence": np.repeat(np.array(sents, dtype=object), counts),
                           **{k: v[take] for k, v in cols.items()}})
    w_start_arr = np.array(w_start)
    w_pll = np.add.reduceat(lp64, w_start_arr)
    w_end = np.append(w_start_arr[1:], len(lp64))
    n_words = np.bincount(np.array(w_u), minlength=len(encoded))
    uw_start = np.concatenate([[0], np.cumsum(n_words)])
    wtake = np.concatenate([np.arange(uw_start[u], uw_start[u + 1]) for u in which])
    words = pd.DataFrame({"sentence_idx": np.repeat(np.arange(len(which)), n_words[which_arr]),
                          "word_idx": cols["word_idx"][w_start_arr][wtake],
                          "word": cols["word"][w_start_arr][wtake],
                          "n_subwords": (w_end - w_start_arr)[wtake],
                          "char_start": cols["char_start"][w_start_arr][wtake],
                          "char_end": cols["char_end"][w_end - 1][wtake],
                          "pll": w_pll[wtake]})
    u_pll = np.add.reduceat(lp64, u_start[:-1])
    word_pll = [w_pll[uw_start[u]:uw_start[u + 1]].tolist() for u in range(len(encoded))]
    table = pd.DataFrame({"sentence_idx": np.arange(len(which)), "sentence": sents, "prefix": prefixes,
                          "pll": u_pll[which_arr], "n_tokens": counts, "n_words": n_words[which_arr],
                          "word_pll": [word_pll[u] for u in which]})
    return table, tokens, words


def _objects(values: list) -> np.ndarray:
    """A 1-d object array of arbitrary items (tuples stay whole)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = v
    return out


@dataclass
class BlimpResult(JSONResult):
    """BLiMP minimal-pair accuracy (good sentence PLL > bad sentence PLL) for one or more metrics
    (``save(path)`` / ``BlimpResult.load(path)``: one JSON file).

    Attributes:
        model, note: as in ``PLLResult`` (show ``note`` with every number).
        metrics: the metrics evaluated.
        pairs: one row per pair and metric: ``paradigm``, ``field``, ``linguistics_term``,
            ``pair_id``, ``metric``, ``sentence_good``, ``sentence_bad``, ``pll_good``,
            ``pll_bad``, ``correct`` (strictly greater; a tie counts as wrong).
        paradigms: one row per paradigm and metric: ``paradigm``, ``field``,
            ``linguistics_term``, ``metric``, ``n``, ``accuracy``.
        fields: one row per field and metric: ``field``, ``metric``, ``n_paradigms``, ``n``,
            ``accuracy`` (mean of the field's paradigm accuracies).
        overall: one row per metric: ``metric``, ``n_paradigms``, ``n``, ``accuracy`` (mean of
            the paradigm accuracies, BLiMP's convention).
        meta: fingerprint, backend, data_dir, paradigms and limit asked for, batch_size.
    """

    model: str
    note: str
    metrics: tuple[str, ...]
    pairs: pd.DataFrame
    paradigms: pd.DataFrame
    fields: pd.DataFrame
    overall: pd.DataFrame
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.metrics = tuple(self.metrics)  # ``load`` reads a JSON list

    def show(self) -> Any:
        """Accuracy per field (and overall) and metric, with a 95% CI of the mean of paradigm accuracies
        (normal approximation) and the chance line at 50% (``viz.accuracy_ci``)."""
        from . import viz

        par = self.paradigms
        groups = [("overall", par)] + [(f, par[par["field"] == f]) for f in sorted(par["field"].unique())]
        rows = [(name, metric, *macro_ci(g["accuracy"], g["n"]))
                for name, group in groups for metric, g in group.groupby("metric", sort=False)]
        frame = pd.DataFrame(rows, columns=["field", "scorer", "accuracy", "ci_low", "ci_high"])
        label = f" ({self.note})" if self.note else ""
        return viz.accuracy_ci(frame, "field", chance=0.5, title=f"BLiMP accuracy of {self.model}{label}, 95% CI")

    def summary(self) -> pd.DataFrame:
        """Accuracy with one column per metric: the row "overall", then one row per field."""
        over = self.overall.assign(field="overall")
        both = pd.concat([over, self.fields], ignore_index=True)
        wide = both.pivot(index="field", columns="metric", values="accuracy")
        order = ["overall"] + sorted(self.fields["field"].unique())
        return wide.reindex(index=order, columns=list(self.metrics)).rename_axis(index="", columns=None)

    def __repr__(self) -> str:
        acc = ", ".join(f"{m}={a:.3f}" for m, a in zip(self.overall["metric"], self.overall["accuracy"]))
        label = f", note={self.note!r}" if self.note else ""
        return f"BlimpResult(model={self.model!r}, paradigms={self.paradigms['paradigm'].nunique()}, {acc}{label})"


def pll_blimp(
    mlm: MLMSource,
    data_dir: str | Path | None = None,
    *,
    paradigms: Sequence[str] | None = None,
    metrics: Sequence[str] = METRICS,
    limit: int | None = None,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool | ScoreCache = True,
) -> BlimpResult:
    """BLiMP accuracy of a masked LM: the good sentence must get the higher PLL.

    Args:
        mlm: a loaded ``MLM`` or anything ``load_mlm`` accepts.
        data_dir, paradigms, limit: which pairs (see ``load_blimp``).
        metrics: PLL metrics to evaluate (each scores every sentence once).
        batch_size, progress, cache: as in ``pll``.

    Example:
        >>> pll_blimp("splade-tiny", limit=100).summary()  # doctest: +SKIP
    """
    metrics = _check_metrics(metrics)
    data = load_blimp(data_dir, paradigms=paradigms, limit=limit)
    mlm = _as_mlm(mlm)
    sentences = list(data["sentence_good"]) + list(data["sentence_bad"])
    n = len(data)
    per_metric = []
    for metric, res in pll_metrics(mlm, sentences, metrics, batch_size=batch_size, progress=progress,
                                   cache=cache).items():
        scores = res.scores
        per_metric.append(data.assign(metric=metric, pll_good=scores[:n], pll_bad=scores[n:],
                                      correct=scores[:n] > scores[n:]))
    pairs = pd.concat(per_metric, ignore_index=True)
    keys = ["paradigm", "field", "linguistics_term", "metric"]
    par = (pairs.groupby(keys, sort=False)["correct"].agg(n="size", accuracy="mean").reset_index())
    fields = (par.groupby(["field", "metric"], sort=False)
              .agg(n_paradigms=("paradigm", "size"), n=("n", "sum"), accuracy=("accuracy", "mean")).reset_index())
    overall = (par.groupby("metric", sort=False)
               .agg(n_paradigms=("paradigm", "size"), n=("n", "sum"), accuracy=("accuracy", "mean")).reset_index())
    meta = model_meta(mlm, data_dir=None if data_dir is None else str(data_dir),
                      paradigms=None if paradigms is None else list(paradigms), limit=limit, batch_size=batch_size)
    return BlimpResult(mlm.name, mlm.note, metrics, pairs, par, fields, overall, meta)
