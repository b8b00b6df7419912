"""Requests -> per-token log-probs, the same for every backend.

``logprobs(lm, requests)`` encodes every (context, continuation) pair with ``text.encode``,
deduplicates identical encodings, looks them up in the on-disk cache and hands the rest to the
model's backend (``lm.backend``, see ``surfacelab.backends``): the in-process transformers backend
plans shared-prefix rows and batches by token count; a server backend sends token-id prompts.
Finished batches are committed to the cache as they come back, so an interrupted call resumes
where it stopped. ``next_token_logprobs`` does the same for next-token distributions after prompts, and
``masked_logprobs`` for the masked copies of a masked LM's inputs (PLL; ``backends.masked``).

Before every call the model's fingerprint is brought up to date (``LM.refresh_fingerprint``: the weights are
hashed again only if one was edited in place or replaced), so an edited model never gets its old numbers; a
forward hook on the model (``backends.base.foreign_hooks``) switches every cache off for the call, with a warning.

Every call returns a ``Results`` list whose ``.stats`` (an ``EngineStats``) counts that call's
work: requests, cache hits, tokens forwarded against the ideal, and which execution path ran.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import TYPE_CHECKING, Any, Callable, Container, Iterable, Sequence

import numpy as np

from .._checks import is_int
from .. import text
from ..backends.base import (RANK_TOL, Cancelled, EngineStats, NextTokenScores, TokenScores, cancelled_when,
                            foreign_hooks, progress_callback, reporting)
from ..backends.masked import MaskedCopy, MaskedScores, MaskedStats
from ..backends.packing import unique_prefix_tokens
from .cache import ScoreCache, default_cache, derived_key, masked_key, request_key
from .memory import TOP_CACHE, clear_top_cache
from .results import NextToken, Request, Results, Scored, token_strings

if TYPE_CHECKING:
    from ..models import LM, MLM

__all__ = ["Cancelled", "EngineStats", "MaskedCopy", "MaskedScores", "MaskedStats", "NextToken", "RANK_TOL",
           "Results", "Scored", "cancelled_when", "check_batch_size", "check_requests", "clear_top_cache", "derived",
           "logprobs", "masked_logprobs", "next_token_logprobs", "reporting"]



def check_requests(requests: Any) -> list[Request]:
    """Validate (context, continuation) pairs; errors name the offending request."""
    if isinstance(requests, (str, bytes)) or not isinstance(requests, Iterable):
        raise TypeError("requests: expected a list of (context, continuation) pairs")
    out = []
    for i, r in enumerate(requests):
        if not isinstance(r, (tuple, list)) or len(r) != 2:
            raise ValueError(f"requests[{i}]: expected a (context, continuation) pair, got {r!r}")
        text.check_text(r[0], f"requests[{i}] context")
        text.check_text(r[1], f"requests[{i}] continuation", allow_empty=False)
        out.append((r[0], r[1]))
    return out


def check_batch_size(batch_size: int | str) -> int | None:
    """Rows per batch from ``batch_size`` (None for "auto"); anything else is a ValueError."""
    if batch_size == "auto":
        return None
    if not is_int(batch_size) or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive int or 'auto', got {batch_size!r}")
    return batch_size


def _store(cache: bool | ScoreCache) -> ScoreCache | None:
    """The disk cache a call uses (None: none)."""
    if cache is True:
        return default_cache()
    return cache if isinstance(cache, ScoreCache) else None


def _cache_for(lm: LM | MLM, cache: bool | ScoreCache) -> bool | ScoreCache:
    """The ``cache`` argument a call may use: False where a forward hook on the model may change its outputs
    (said with a warning), the one given otherwise. First brings ``lm.fingerprint`` up to date."""
    lm.refresh_fingerprint()
    hooked = foreign_hooks(lm.model) if cache is not False and lm.model is not None else []
    if not hooked:
        return cache
    where = ", ".join(hooked[:3]) + (", ..." if len(hooked) > 3 else "")
    warnings.warn(f"forward hooks on the model ({where}): the cache is not used for this call", stacklevel=3)
    return False


def _lookup(keys: Sequence[str], store: ScoreCache | None, top_k: int,
            cache: bool | ScoreCache) -> tuple[dict[str, Any], dict[str, Any]]:
    """(found, stored) for ``keys``: ``stored`` what the disk holds; ``found`` what the call can use without a
    forward: the disk's entries, or with ``top_k`` the in-memory top-k cache's (the disk keeps no alternatives)."""
    stored = store.get_many(keys) if store is not None else {}
    if top_k:
        return (TOP_CACHE.get_many(keys, top_k) if cache is not False else {}), stored
    return dict(stored), stored


def _dispatch(pending: dict[str, Any], run: Callable[[list[Any], Callable[[list[int], list[Any]], None]], list[Any]],
              store: ScoreCache | None, entry: Callable[[Any], dict[str, np.ndarray]], *,
              stored: Container[str] = (), on_commit: Callable[[int], None] | None = None) -> dict[str, Any]:
    """The part every engine call shares: the ``pending`` inputs (key -> input, each key once) go to ``run(inputs,
    on_done)`` (the backend), and each batch it finishes is committed to ``store`` as it comes back (as ``entry``
    makes it; keys in ``stored`` are there already), so that an interrupted or cancelled call keeps them.

    Returns:
        key -> the backend's result, for every pending key.
    """
    order = list(pending)

    def commit(done: list[int], results: list[Any]) -> None:
        if store is not None:
            store.put_many({order[d]: entry(r) for d, r in zip(done, results) if order[d] not in stored})
        if on_commit is not None:
            on_commit(len(done))

    return dict(zip(order, run(list(pending.values()), commit))) if order else {}


def _check_top_k(top_k: Any) -> int:
    if not is_int(top_k) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0, got {top_k!r}")
    return top_k


def _next_entry(s: NextTokenScores) -> dict[str, np.ndarray]:
    """What the disk cache keeps of a next-token distribution: the selected ids' log-probs and the entropy."""
    return {"selected": s.selected, "entropy": np.array([s.entropy], np.float32)}


def _score_entry(s: TokenScores) -> dict[str, np.ndarray]:
    """What the disk cache keeps of a request's scores (top-k alternatives stay in memory)."""
    return {"logprob": s.logprob.astype(np.float32), "rank": s.rank.astype(np.int64),
            "entropy": s.entropy.astype(np.float32)}


def logprobs(
    lm: LM,
    requests: Sequence[Request],
    *,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool | ScoreCache = True,
    top_k: int = 0,
) -> Results:
    """Per-token log-probs of every continuation given its context.

    Args:
        lm: a loaded ``LM``.
        requests: (context, continuation) pairs; duplicates are computed once, and requests that
            share a token prefix run it once where the backend can.
        batch_size: requests per batch, or "auto" to let the backend plan batches (by token count
            in-process; backs off on OOM, afresh on every call).
        progress: show a ``tqdm.auto`` bar for long runs.
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False: neither the disk
            nor the in-memory top-k cache is read or written; what a forward hook on the model gets).
        top_k: also return the k most likely tokens at every scored position (``Scored.top_ids``,
            ``top_logprobs``), from the same forward pass. The disk cache does not hold them; an
            in-memory cache of the last ``TOP_CACHE_SIZE`` requests does, so a live view that asks
            again pays nothing.

    Returns:
        One ``Scored`` per request, in the order given, as a ``Results`` list whose ``.stats`` are
        this call's ``EngineStats``.

    Example:
        >>> [s.n_tokens for s in logprobs(lm, [("The man took a", " bath"), ("The cat", " sat")], progress=False)]
        [1, 1]
    """
    reqs = check_requests(requests)
    rows = check_batch_size(batch_size)
    top_k = _check_top_k(top_k)
    cache = _cache_for(lm, cache)
    stats = EngineStats(requests=len(reqs), backend=lm.backend.kind)
    encs = [text.encode(lm, c, x) for c, x in reqs]
    unique: dict[tuple, int] = {}
    for e in encs:
        unique.setdefault(e.key, len(unique))
    uniq_encs: list[Any] = [None] * len(unique)
    for e in encs:
        uniq_encs[unique[e.key]] = e
    stats.unique = len(uniq_encs)
    store = _store(cache)
    keys = [request_key(lm.fingerprint, e.input_ids, e.start) for e in uniq_encs]
    # top-k lives in memory only; the disk still supplies the scores (one value per request)
    found, stored = _lookup(keys, store, top_k, cache)
    stats.cached = len(found)
    pending = {k: e for k, e in zip(keys, uniq_encs) if k not in found}
    stats.tokens_needed = sum(len(e.input_ids) - 1 for e in pending.values())
    stats.tokens_unique = unique_prefix_tokens([e.input_ids[:-1] for e in pending.values()])

    on_batch = progress_callback()
    forwarded = [0]

    def report(n: int) -> None:
        if on_batch is not None:
            forwarded[0] += n
            on_batch(stats.cached + forwarded[0], stats.unique)

    computed = _dispatch(pending, lambda encs, on_done: lm.backend.score(
        encs, top_k=top_k, batch_size=rows, progress=progress, stats=stats, on_done=on_done), store, _score_entry,
        stored=stored, on_commit=report)
    fresh = {}
    for key, s in computed.items():
        entry = dict(stored.get(key, _score_entry(s)))  # one value per request, whichever pass stored it
        if top_k:
            entry.update(top_ids=s.top_ids, top_logprobs=s.top_logprobs)
        fresh[key] = entry
    if top_k and cache is not False:
        TOP_CACHE.put_many(fresh, top_k)
    found.update(fresh)
    out = Results(stats=stats)
    for req, e in zip(reqs, encs):
        r = found[keys[unique[e.key]]]
        out.append(Scored(req, e, r["logprob"], r["rank"], r["entropy"], r["rank"] == 1, token_strings(lm, e),
                          r.get("top_ids"), r.get("top_logprobs")))
    return out


def next_token_logprobs(
    lm: LM,
    contexts: Sequence[str],
    *,
    token_ids: Sequence[int] | Sequence[Sequence[int]] = (),
    top_k: int = 0,
    batch_size: int | str = "auto",
    cache: bool | ScoreCache = False,
) -> Results:
    """The next-token log-probs after each context: chosen token ids and/or the top k.

    Prompts that share a token prefix (one question under several option orders, one instruction
    before many questions) forward it once where the backend can.

    Args:
        lm: a loaded ``LM``.
        contexts: prompts (the BOS/EOS rule of ``text`` applies to an empty one).
        token_ids: vocabulary ids whose log-probs are returned in ``selected``: one list for every context, or
            one list per context (each context's own ids, in its ``selected``). The disk cache keys a prompt by its
            own list, so a prompt's entry depends on that prompt alone, whatever else is asked with it.
        top_k: how many of the most likely next tokens to return.
        batch_size: requests per batch, or "auto" (as in ``logprobs``).
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False). The disk cache
            holds ``selected`` and ``entropy``; with ``top_k > 0`` the in-memory cache of the last
            ``TOP_CACHE_SIZE`` prompts holds the whole result instead (not with False), so a view that
            asks again (a first part, then the rest) pays nothing. Unless False, a prompt that was the
            context of a recent small scoring call is answered from the distribution that call computed
            at its first scored position, where the backend keeps them (in-process: the last
            ``RECENT_CONTEXTS``), with no forward (``stats.paths["recalled"]``).

    Returns:
        One ``NextToken`` per context, in order, as a ``Results`` list with this call's ``.stats``.
    """
    if isinstance(contexts, str):
        raise TypeError("contexts: expected a list of strings, got a single string")
    top_k = _check_top_k(top_k)
    sels = _selections(lm, token_ids, len(contexts))
    rows = check_batch_size(batch_size)
    cache = _cache_for(lm, cache)
    prompts = [text.encode_prompt(lm, text.check_text(c, f"contexts[{i}]")) for i, c in enumerate(contexts)]
    store = _store(cache) if any(sels) and not top_k else None
    keys = [request_key(f"{lm.fingerprint}|next-token|{','.join(map(str, s))}", p, 0) for p, s in zip(prompts, sels)]
    found, _ = _lookup(keys, store, top_k, cache)
    todo = {k: (p, s) for k, p, s in zip(keys, prompts, sels) if k not in found}
    stats = EngineStats(requests=len(prompts), unique=len(set(keys)), cached=len(found), backend=lm.backend.kind)
    recall = getattr(lm.backend, "remembered", None)  # an in-process backend's recent scoring contexts
    computed: dict[str, NextTokenScores] = {}
    if recall is not None and cache is not False and todo:
        ids = _union(todo)
        hits = recall([p for p, _ in todo.values()], token_ids=ids, top_k=top_k)
        computed = {k: _own(hits[i], todo[k][1], ids) for i, k in enumerate(todo) if i in hits}
        todo = {k: v for k, v in todo.items() if k not in computed}
        if computed:
            stats.count_path("recalled", len(computed))
            if store is not None:
                store.put_many({k: _next_entry(r) for k, r in computed.items()})
    stats.tokens_needed = sum(len(p) for p, _ in todo.values())
    stats.tokens_unique = unique_prefix_tokens([p for p, _ in todo.values()])
    for group in _select_groups(todo):
        computed.update(_next_group(lm, group, top_k=top_k, rows=rows, store=store, stats=stats))
    if top_k and cache is not False:
        TOP_CACHE.put_many({k: {**_next_entry(r), "top_ids": r.top_ids, "top_logprobs": r.top_logprobs}
                             for k, r in computed.items()}, top_k)
    out = Results(stats=stats)
    for c, p, k in zip(contexts, prompts, keys):
        if k in computed:
            r = computed[k]
            selected, ent, tids, tlp = r.selected, r.entropy, r.top_ids, r.top_logprobs
        else:
            selected, ent = found[k]["selected"], float(found[k]["entropy"][0])
            tids = found[k].get("top_ids", np.zeros(0, np.int64)).copy()  # the cached array stays as it is
            tlp = found[k].get("top_logprobs", np.zeros(0, np.float32))
        out.append(NextToken(c, p, selected.astype(np.float32), tids, tlp.astype(np.float32),
                             [lm.tokenizer.decode([int(t)]) for t in tids], ent))
    return out


def derived(lm: LM, kind: str, payloads: Sequence[str], compute: Callable[[list[int]], list[np.ndarray]], *,
            cache: bool | ScoreCache = True) -> tuple[list[np.ndarray], int]:
    """Numbers an analysis derives from one model's forward passes (made through this engine), kept in the disk cache
    beside them: one float64 vector per entry, found again by the model's fingerprint, ``kind`` and the entry's
    payload, so that a rerun skips the analysis's own work (tokenizing, planning) as well as the forwards.

    Args:
        lm: the model the numbers are of (its fingerprint is brought up to date; a forward hook on it switches the
            cache off, as for every engine call).
        kind: the analysis and the version of its code: an entry cached by other code is never read.
        payloads: per entry, everything besides the model that its numbers depend on, as one string.
        compute: ``compute(positions)`` -> the vectors of the entries at those positions of ``payloads`` (the ones
            not cached, each payload once), in that order.
        cache: as in ``logprobs``.

    Returns:
        The vectors, one per payload in order, and how many of them came from the cache.
    """
    store = _store(_cache_for(lm, cache))
    keys = [derived_key(lm.fingerprint, kind, p) for p in payloads]
    stored = store.get_many(list(dict.fromkeys(keys))) if store is not None else {}
    found = {k: e["value"].view("<f8") for k, e in stored.items() if "value" in e and e["value"].dtype == "<i4"
             and e["value"].size % 2 == 0}
    cached = sum(k in found for k in keys)
    missing = sorted({k: i for i, k in reversed(list(enumerate(keys))) if k not in found}.values())
    if missing:
        fresh = [np.ascontiguousarray(v, dtype="<f8") for v in compute(missing)]
        found.update((keys[i], v) for i, v in zip(missing, fresh))
        if store is not None:  # kept bit for bit: float64 as pairs of int32 (the cache stores floats as float32)
            store.put_many({keys[i]: {"value": v.view("<i4")} for i, v in zip(missing, fresh)})
    return [found[k] for k in keys], cached


#: A next-token call with one list of token ids per prompt asks the backend for the union of a group's lists: groups
#: are cut so that prompts x union stays under this many selected log-probs (the union of a whole dataset's lists would
#: make a (prompts x union) array that grows with the square of the items).
SELECT_ELEMENTS = 1 << 22


def _selections(lm: LM, token_ids: Any, n: int) -> list[tuple[int, ...]]:
    """The token ids each of ``n`` prompts selects: one shared list, or one list per prompt; checked."""
    per_prompt = len(token_ids) > 0 and all(isinstance(t, (list, tuple, np.ndarray)) for t in token_ids)
    if per_prompt and len(token_ids) != n:
        raise ValueError(f"token_ids: expected one list per context ({n}), got {len(token_ids)} lists")
    lists = [tuple(t) for t in token_ids] if per_prompt else [tuple(token_ids)] * n
    for ids in dict.fromkeys(lists):
        bad = [t for t in ids if not is_int(t) or not 0 <= int(t) < lm.vocab_size]
        if bad:
            raise ValueError(f"token_ids: not vocabulary ids: {bad[:5]}")
    return [tuple(int(t) for t in ids) for ids in lists]


def _union(todo: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> tuple[int, ...]:
    """The ids a backend call for ``todo`` (key -> (prompt, its ids)) selects: the one list every prompt shares, in its
    order, or the sorted union of theirs."""
    lists = {s for _, s in todo.values()}
    return next(iter(lists)) if len(lists) == 1 else tuple(sorted(set().union(*lists)))


def _own(r: NextTokenScores, sel: tuple[int, ...], ids: tuple[int, ...]) -> NextTokenScores:
    """A backend's answer for a call that selected ``ids`` (``_union``: the prompt's own list, or a sorted union),
    with only the prompt's own ids ``sel`` kept."""
    if sel == ids:
        return r
    return dataclasses.replace(r, selected=r.selected[np.searchsorted(ids, sel)])


def _next_group(lm: LM, group: dict[str, tuple[tuple[int, ...], tuple[int, ...]]], *, top_k: int, rows: int | None,
                store: ScoreCache | None, stats: EngineStats) -> dict[str, NextTokenScores]:
    """One backend call for a group of pending prompts (key -> (prompt, its ids)) that selects the union of their ids;
    each answer keeps its own prompt's ids and is committed to ``store`` as its batch comes back."""
    ids, order = _union(group), list(group)

    def run(prompts: list[Any], on_done: Callable[[list[int], list[Any]], None]) -> list[NextTokenScores]:
        def done(at: list[int], results: list[Any]) -> None:
            on_done(at, [_own(r, group[order[d]][1], ids) for d, r in zip(at, results)])

        got = lm.backend.next_token(prompts, token_ids=ids, top_k=top_k, batch_size=rows, progress=False, stats=stats,
                                    on_done=done)
        return [_own(r, group[k][1], ids) for k, r in zip(order, got)]

    return _dispatch({k: p for k, (p, _) in group.items()}, run, store, _next_entry)


def _select_groups(todo: dict[str, tuple[tuple[int, ...], tuple[int, ...]]]) -> list[dict]:
    """The pending prompts (key -> (prompt, its ids)) in groups that one backend call each answers: one group when
    every prompt selects the same ids, else runs of consecutive prompts whose union of ids times their number stays
    under ``SELECT_ELEMENTS``."""
    if len({s for _, s in todo.values()}) <= 1:
        return [todo] if todo else []
    groups: list[dict] = [{}]
    union: set[int] = set()
    for key, (prompt, sel) in todo.items():
        grown = union | set(sel)
        if groups[-1] and (len(groups[-1]) + 1) * len(grown) > SELECT_ELEMENTS:
            groups.append({})
            grown = set(sel)
        groups[-1][key], union = (prompt, sel), grown
    return groups


def _check_copies(copies: Any) -> list[MaskedCopy]:
    """Validate masked copies; errors name the offending copy."""
    if not isinstance(copies, Sequence):
        raise TypeError(f"copies: expected a list of MaskedCopy, got {type(copies).__name__}")
    for i, c in enumerate(copies):
        if not isinstance(c, MaskedCopy):
            raise TypeError(f"copies[{i}]: expected a MaskedCopy, got {type(c).__name__}")
        if not c.scored or not all(0 <= p < len(c.input_ids) for p in c.masked + c.scored):
            raise ValueError(f"copies[{i}]: scored positions (at least one) and masked positions must lie in its "
                             f"{len(c.input_ids)} input ids")
    return list(copies)


def masked_logprobs(
    mlm: MLM,
    copies: Sequence[MaskedCopy],
    *,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool | ScoreCache = True,
) -> Results:
    """Log-prob and rank of the scored tokens of masked copies of a masked LM's inputs (PLL's forward passes).

    Args:
        mlm: a loaded ``MLM``.
        copies: ``MaskedCopy`` objects (input ids, masked positions, scored positions); duplicates run once.
        batch_size: copies per batch, or "auto" (a token budget per batch; halves on OOM).
        progress: show a ``tqdm.auto`` bar for long runs.
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False), as in ``logprobs``; a copy
            is keyed by the model's fingerprint, its token ids and its masked and scored positions. Finished
            batches are committed as they come back, so a cancelled or interrupted call keeps them.

    Returns:
        One ``MaskedScores`` per copy, in the order given, as a ``Results`` list whose ``.stats`` are this call's
        ``MaskedStats``.

    Example:
        >>> ids = tuple(mlm.tokenizer("the cat sat")["input_ids"])
        >>> res = masked_logprobs(mlm, [MaskedCopy(ids, (2,), (2,)), MaskedCopy(ids, (1, 2), (1, 2))])
        >>> [len(s.logprob) for s in res], res.stats.unique
        ([1, 2], 2)
    """
    rows = check_batch_size(batch_size)
    copies = _check_copies(copies)
    cache = _cache_for(mlm, cache)
    backend = mlm.backend
    unique = list(dict.fromkeys(copies))
    keys = [masked_key(mlm.fingerprint, c.input_ids, c.masked, c.scored) for c in unique]
    store = _store(cache)
    stored, _ = _lookup(keys, store, 0, cache)
    found = {k: MaskedScores(e["logprob"], e["rank"].astype(np.int64)) for k, e in stored.items()}
    stats = MaskedStats(requests=len(copies), unique=len(unique), cached=len(found), backend=backend.kind)
    pending = {k: c for k, c in zip(keys, unique) if k not in found}
    found.update(_dispatch(pending, lambda todo, on_done: backend.score(
        todo, batch_size=rows, progress=progress, stats=stats, on_done=on_done), store,
        lambda s: {"logprob": s.logprob, "rank": s.rank}))
    by_copy = {c: found[k] for c, k in zip(unique, keys)}
    return Results([by_copy[c] for c in copies], stats=stats)
