"""Requests -> per-token log-probs.

``logprobs(lm, requests)`` encodes every (context, continuation) pair with ``text.encode``,
deduplicates identical encodings, looks them up in the on-disk cache and computes the rest:

* **Shared-prefix reuse.** Unique encodings are sorted by token ids and split into groups that
  share a token prefix (all options of one question, every option under one domain premise). A
  group runs as one packed row: the prefix once, then every member's suffix, with position ids
  restarting after the prefix for each suffix and a 4-D attention mask that lets a suffix see the
  prefix and itself only. That is the key/value reuse of a prefix cache without copying the cache
  per suffix or padding each suffix. Groups are chosen by a cost model on token counts
  (``_groups``): reuse is used only where it saves at least ``REUSE_MIN_SAVED`` forwarded tokens.
  The split is on token ids, so boundary merges and left truncation need no special case.
* **Batching by token count.** Batches are planned by a token budget (``TOKEN_BUDGET``) or a row
  count; the automatic budget halves on an out-of-memory error and resets on every call.
* **Projection only where needed.** The LM head and the float32 log-softmax run only at positions
  whose next token is scored, in chunks of at most ``PROJECT_ELEMENTS`` logits.
* **No host sync in the loop.** Per-token results stay on the device until the last batch.
* **One plan, several heads.** What runs at the scored positions is a *head*: scores
  (``logprobs``), scores plus the top-k alternatives (``logprobs(top_k=k)``, kept in an in-memory
  cache), or a prompt's next-token distribution (``next_token_logprobs``: a prompt is a request
  whose only scored position is its last token, so prompts sharing a prefix pack like options do).

``engine.stats`` holds the counters of the last call (see ``EngineStats``).
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from . import text
from .cache import ScoreCache, default_cache, request_key

Request = tuple[str, str]
#: ``head(lm, hidden, targets) -> (n, width)`` float tensor: what a run computes at the n scored
#: positions of a batch from their final hidden states and target token ids.
Head = Callable[[Any, torch.Tensor, torch.Tensor], torch.Tensor]

#: Token budget of one automatic batch, by device type (rows x padded length; for a shared-prefix
#: batch: prefix rows x prefix length + suffix rows x suffix length).
TOKEN_BUDGET = {"cpu": 4096, "mps": 16384, "cuda": 65536}
#: A shared prefix is reused only if it saves at least this many forwarded tokens...
REUSE_MIN_SAVED = 8
#: ... and at least this fraction of the tokens its requests would forward plainly (a token or two
#: shared by unrelated requests does not pay for the longer packed row and its attention).
REUSE_MIN_GAIN = 0.1
#: Most requests in one shared-prefix group (bounds the planning cost; a larger set is split).
GROUP_MAX = 256
#: Most tokens in one packed shared-prefix row (the prefix plus its suffixes).
ROW_MAX = 256
#: A token outranks the target only if more likely by more than this (nats): float noise between
#: batch layouts (padding, packed rows) must not reorder near-ties.
RANK_TOL = 1e-4
#: Most logits (positions x vocabulary) projected at once.
PROJECT_ELEMENTS = 1 << 25
#: Requests whose top-k alternatives are kept in memory (``logprobs(..., top_k=k)``).
TOP_CACHE_SIZE = 4096

_TOP_CACHE: OrderedDict[tuple[str, int], dict[str, np.ndarray]] = OrderedDict()


@dataclass
class Scored:
    """The scored tokens of one request.

    Arrays have one entry per continuation token: ``token_ids``, ``logprob`` (natural log,
    computed in float32), ``rank`` (1 = the model's top choice; tokens within ``RANK_TOL`` nats
    tie), ``entropy`` (nats, of the
    next-token distribution at that position) and ``greedy`` (rank == 1).
    """

    request: Request
    encoding: text.Encoding
    logprob: np.ndarray
    rank: np.ndarray
    entropy: np.ndarray
    greedy: np.ndarray
    tokens: list[str] = field(default_factory=list)
    top_ids: np.ndarray | None = None  # (n_tokens, k) most likely tokens at each position, with ``top_k``
    top_logprobs: np.ndarray | None = None  # (n_tokens, k) their log-probs, most likely first

    @property
    def total(self) -> float:
        """Summed log-prob of the continuation."""
        return float(self.logprob.astype(np.float64).sum())

    @property
    def n_tokens(self) -> int:
        """Number of scored tokens."""
        return len(self.logprob)

    @property
    def flags(self) -> list[str]:
        """Per-token flags: 'boundary_merge' on a token straddling the join, 'truncated' where the context was cut."""
        out = []
        for i in range(self.n_tokens):
            f = []
            if i == 0 and self.encoding.merged:
                f.append("boundary_merge")
            if self.encoding.truncated:
                f.append(f"truncated:{self.encoding.truncated}")
            out.append(",".join(f))
        return out

    def frame(self) -> pd.DataFrame:
        """One row per scored token."""
        enc = self.encoding
        return pd.DataFrame({
            "position": np.arange(self.n_tokens),
            "token": self.tokens,
            "token_id": np.asarray(enc.scored_ids, dtype=np.int64),
            "char_start": [s for s, _ in enc.spans],
            "char_end": [e for _, e in enc.spans],
            "logprob": self.logprob.astype(np.float64),
            "rank": self.rank,
            "entropy": self.entropy.astype(np.float64),
            "greedy": self.greedy,
            "flags": self.flags,
        })


@dataclass
class EngineStats:
    """Counters of the last ``logprobs`` or ``next_token_logprobs`` call.

    Token counts cover the requests computed in this call (not those served by the cache). A
    request of n tokens needs n - 1 positions forwarded (its last token is only a target), so:
    ``tokens_needed`` is what a plan without prefix reuse forwards, ``tokens_unique`` what an
    ideal plan forwards (every distinct token prefix once), and ``tokens_forwarded`` what was
    actually forwarded; ``redundancy`` = forwarded / unique (1.0 is ideal).
    """

    requests: int = 0
    unique: int = 0
    cached: int = 0
    batches: int = 0
    tokens_forwarded: int = 0  # non-pad tokens run through the model (prefix and suffix passes)
    tokens_padded: int = 0  # rows x padded length actually computed, padding included
    tokens_needed: int = 0  # sum of (length - 1) of the unique requests computed
    tokens_unique: int = 0  # distinct token prefixes among them (the unique-prefix plan)
    tokens_scored: int = 0  # positions projected onto the vocabulary
    prefix_groups: int = 0  # shared prefixes run once and reused
    reused: int = 0  # requests scored on top of a shared prefix
    oom_backoffs: int = 0  # times the automatic token budget was halved

    @property
    def redundancy(self) -> float:
        """Tokens forwarded per token an ideal unique-prefix plan needs."""
        return self.tokens_forwarded / self.tokens_unique if self.tokens_unique else 1.0

    def as_dict(self) -> dict[str, float]:
        """The counters (and ``redundancy``) as a plain dict."""
        return {**self.__dict__, "redundancy": self.redundancy}


stats = EngineStats()


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
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size: expected a positive int or 'auto', got {batch_size!r}")
    return batch_size


def _lcp(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _unique_prefix_tokens(seqs: list[tuple[int, ...]]) -> int:
    """Number of distinct non-empty prefixes among ``seqs`` (nodes of their token trie)."""
    ordered = sorted(seqs)
    return sum(len(s) - (_lcp(p, s) if k else 0) for k, (p, s) in enumerate(zip([()] + ordered, ordered)))


@dataclass
class _Group:
    """Encodings that run as one row: a shared prefix of ``prefix`` tokens (0 = none) and their suffixes."""

    prefix: int
    members: list[int]
    widths: list[int]  # forwarded suffix length of each member

    @property
    def length(self) -> int:
        """Tokens in the packed row: the prefix once, then every suffix."""
        return self.prefix + sum(self.widths)


def _groups(encs: list[text.Encoding], max_group: int, window: int | None) -> list[_Group]:
    """Split encodings into shared-prefix groups by a cost model on token counts.

    Encodings are sorted by their reusable prefix (the tokens before the first scored position);
    an optimal split of that order into runs (dynamic programming over runs of at most
    ``max_group``) maximises the forwarded tokens saved, (k - 1) x common prefix per run, counting
    only runs that save at least ``REUSE_MIN_SAVED`` tokens and ``REUSE_MIN_GAIN`` of their plain
    cost. A run longer than ``ROW_MAX`` packed tokens is cut into several rows that each repeat the
    prefix. Everything else runs plainly. Encodings longer than a sliding attention window never
    share a prefix (the packed row's own mask would not apply the window).
    """
    heads = [e.input_ids[:e.start - 1] for e in encs]
    eligible = [i for i, e in enumerate(encs) if window is None or len(e.input_ids) < window]
    order = sorted(eligible, key=lambda i: (heads[i], encs[i].input_ids))
    n = len(order)
    adjacent = np.array([_lcp(heads[a], heads[b]) for a, b in zip(order, order[1:])], dtype=np.int64)
    cost = np.concatenate([[0], np.cumsum([len(encs[i].input_ids) - 1 for i in order])])
    best = np.zeros(n + 1)
    cut = np.zeros(n + 1, dtype=np.int64)
    for j in range(1, n + 1):
        lo = max(0, j - max_group)
        common = np.minimum.accumulate(adjacent[lo:j - 1][::-1])[::-1]  # common[t]: min lcp of run lo+t..j-1
        size = j - np.arange(lo, j - 1)
        saved = (size - 1) * common
        plain = cost[j] - cost[lo:j - 1]
        saved = np.where((saved >= REUSE_MIN_SAVED) & (saved >= REUSE_MIN_GAIN * plain), saved, 0)
        total = best[lo:j - 1] + saved
        k = int(np.argmax(total)) if len(total) else 0
        if len(total) and total[k] > best[j - 1]:
            best[j], cut[j] = total[k], lo + k
        else:
            best[j], cut[j] = best[j - 1], j - 1
    out: list[_Group] = []
    shared: set[int] = set()
    j = n
    while j > 0:
        i = int(cut[j])
        if j - i > 1:
            p = int(adjacent[i:j - 1].min())
            row = _Group(p, [], [])
            for m in order[i:j]:
                w = len(encs[m].input_ids) - 1 - p
                if row.members and row.length + w > ROW_MAX:
                    out.append(row)
                    row = _Group(p, [], [])
                row.members.append(m)
                row.widths.append(w)
            out.append(row)
            shared.update(order[i:j])
        j = i
    out += [_Group(0, [i], [len(e.input_ids) - 1]) for i, e in enumerate(encs) if i not in shared]
    return out


def _take(groups: list[_Group], rows: int | None, budget: int) -> int:
    """How many of ``groups`` (sorted) form the next batch: same kind, within the request count or token budget."""
    n_req = 0
    for k, g in enumerate(groups):
        if k and (g.prefix > 0) != (groups[0].prefix > 0):
            return k
        n_req += len(g.members)
        width = max(groups[0].length, g.length)
        too_short = 2 * g.length < width  # would be mostly padding: start a narrower batch
        if k and (n_req > rows if rows is not None else (k + 1) * width > budget or too_short):
            return k
    return len(groups)


def project(lm: Any, hidden: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits for selected hidden states, in float32 (applies final soft-capping)."""
    logits = lm.model.get_output_embeddings()(hidden).float()
    cap = getattr(lm.model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _hidden(lm: Any, ids: torch.Tensor, mask: torch.Tensor, **kwargs: Any) -> Any:
    """Run the base transformer (no LM head, no cache); read the states with ``_last_hidden``."""
    return lm.model.base_model(input_ids=ids, attention_mask=mask, use_cache=False, **kwargs)


def _last_hidden(out: Any) -> torch.Tensor:
    """Final hidden states from a base-model output."""
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


def _score_positions(lm: Any, hidden: torch.Tensor, targets: torch.Tensor, top_k: int = 0,
                     select: Sequence[int] = ()) -> torch.Tensor:
    """A ``Head``: (n, 3 + len(select) + 2 top_k) float32 rows: log-prob, rank and entropy of
    ``targets`` after each hidden state, the log-probs of the ``select`` token ids, then the ids
    (exact in float32 below 2**24) and log-probs of the top_k tokens."""
    vocab = lm.model.get_output_embeddings().weight.shape[0]
    step = max(1, PROJECT_ELEMENTS // vocab)
    chosen = torch.tensor(list(select), dtype=torch.long, device=hidden.device)
    parts = []
    for a in range(0, len(targets), step):
        logp = torch.log_softmax(project(lm, hidden[a:a + step]), dim=-1)
        lp = logp.gather(1, targets[a:a + step, None])[:, 0]
        rank = (logp > lp[:, None] + RANK_TOL).sum(1) + 1
        entropy = -(logp.exp() * logp).sum(1)
        cols = [torch.stack([lp, rank.float(), entropy], 1), logp[:, chosen]]
        if top_k:
            top = logp.topk(min(top_k, vocab), dim=-1)
            cols += [top.indices.float(), top.values]
        parts.append(torch.cat(cols, 1))
    return torch.cat(parts)


def _score_batch(lm: Any, encs: list[text.Encoding], groups: list[_Group], pad: int, head: Head) -> torch.Tensor:
    """Run one batch of groups, one row each, and ``head`` at the scored positions; results follow
    the groups' member order.

    A plain row is ``input_ids[:-1]`` under the model's own causal mask. A shared-prefix row packs
    the prefix once and then every member's suffix, with position ids restarting after the
    prefix for each suffix and a 4-D mask letting each suffix see the prefix and itself only.
    """
    dev = lm.device
    width = max(g.length for g in groups)
    ids = torch.full((len(groups), width), pad, dtype=torch.long)
    positions = torch.zeros((len(groups), width), dtype=torch.long)
    block = torch.full((len(groups), width), -1, dtype=torch.long)  # 0 prefix, i+1 suffix i, -1 pad
    rows, cols, targets = [], [], []
    for r, g in enumerate(groups):
        first = encs[g.members[0]].input_ids
        ids[r, :g.prefix] = torch.tensor(first[:g.prefix], dtype=torch.long)
        positions[r, :g.prefix] = torch.arange(g.prefix)
        block[r, :g.prefix] = 0
        at = g.prefix
        for i, (m, w) in enumerate(zip(g.members, g.widths)):
            e = encs[m]
            ids[r, at:at + w] = torch.tensor(e.input_ids[g.prefix:-1], dtype=torch.long)
            positions[r, at:at + w] = torch.arange(g.prefix, g.prefix + w)
            block[r, at:at + w] = i + 1
            rows += [r] * (len(e.input_ids) - e.start)
            cols += range(at + e.start - 1 - g.prefix, at + w)
            targets += e.scored_ids
            at += w
    if groups[0].prefix:
        causal = torch.ones(width, width, dtype=torch.bool).tril()
        seen = causal & ((block[:, None, :] == 0) | (block[:, None, :] == block[:, :, None]))
        mask = torch.zeros(seen.shape, dtype=lm.dtype).masked_fill_(~seen, torch.finfo(lm.dtype).min)
        hidden = _last_hidden(_hidden(lm, ids.to(dev), mask[:, None].to(dev), position_ids=positions.to(dev)))
        stats.prefix_groups += len(groups)
        stats.reused += sum(len(g.members) for g in groups)
    else:
        hidden = _last_hidden(_hidden(lm, ids.to(dev), (block >= 0).long().to(dev)))
    picked = hidden[torch.tensor(rows, device=dev), torch.tensor(cols, device=dev)]
    stats.tokens_forwarded += sum(g.length for g in groups)
    stats.tokens_padded += ids.numel()
    stats.tokens_scored += len(targets)
    return head(lm, picked, torch.tensor(targets, device=dev))


def _run(lm: Any, encs: list[text.Encoding], rows: int | None, progress: bool,
         head: Head) -> list[np.ndarray]:
    """``head``'s rows for each encoding's scored positions; automatic batches halve their token budget
    on out-of-memory."""
    from tqdm.auto import tqdm

    window = getattr(lm.model.config, "sliding_window", None)
    max_group = min(GROUP_MAX, rows) if rows is not None else GROUP_MAX
    groups = _groups(encs, max_group, window if isinstance(window, int) and window > 0 else None)
    groups.sort(key=lambda g: (g.prefix == 0, -g.length))
    budget = TOKEN_BUDGET.get(lm.device.type, 4096)
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    parts: list[torch.Tensor] = []
    done_order: list[int] = []
    done = 0
    bar = tqdm(total=len(encs), desc=f"scoring ({lm.name})", unit="req", disable=not progress or len(encs) < 64)
    with torch.inference_mode():
        while done < len(groups):
            k = _take(groups[done:], rows, budget)
            batch = groups[done:done + k]
            try:
                parts.append(_score_batch(lm, encs, batch, pad, head))
            except torch.OutOfMemoryError:
                if rows is not None or (k == 1 and len(batch[0].members) == 1):
                    raise
                if k == 1:  # one shared-prefix group too large: run it as two halves
                    g, h = batch[0], len(batch[0].members) // 2
                    groups[done:done + 1] = [_Group(g.prefix, g.members[:h], g.widths[:h]),
                                             _Group(g.prefix, g.members[h:], g.widths[h:])]
                budget //= 2
                stats.oom_backoffs += 1
                if lm.device.type == "cuda":
                    torch.cuda.empty_cache()
                continue
            done_order += [m for g in batch for m in g.members]
            done += k
            stats.batches += 1
            bar.update(sum(len(g.members) for g in batch))
    bar.close()
    flat = torch.cat(parts).cpu().numpy() if parts else np.zeros((0, 0), np.float32)
    results: list[np.ndarray] = [flat[:0]] * len(encs)
    k = 0
    for m in done_order:
        n = len(encs[m].input_ids) - encs[m].start
        results[m] = flat[k:k + n]
        k += n
    return results


def _token_strings(lm: Any, enc: text.Encoding) -> list[str]:
    """Readable token strings: the continuation text each token covers, or its decoded form."""
    out = []
    for tid, (s, e) in zip(enc.scored_ids, enc.spans):
        piece = enc.continuation[s:e]
        out.append(piece if piece else lm.tokenizer.decode([tid]))
    return out


def logprobs(
    lm: Any,
    requests: Sequence[Request],
    *,
    batch_size: int | str = "auto",
    progress: bool = True,
    cache: bool | ScoreCache = True,
    top_k: int = 0,
) -> list[Scored]:
    """Per-token log-probs of every continuation given its context.

    Args:
        lm: a loaded ``LM``.
        requests: (context, continuation) pairs; duplicates are computed once, and requests that
            share a token prefix run it once (see the module docstring).
        batch_size: rows per batch, or "auto" to plan batches by token count (backs off on OOM;
            the back-off starts afresh on every call).
        progress: show a ``tqdm.auto`` bar for long runs.
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False).
        top_k: also return the k most likely tokens at every scored position (``Scored.top_ids``,
            ``top_logprobs``), from the same forward pass. The disk cache does not hold them; an
            in-memory cache of the last ``TOP_CACHE_SIZE`` requests does, so a live view that asks
            again pays nothing.

    Returns:
        One ``Scored`` per request, in the order given.

    Example:
        >>> [s.total for s in logprobs(lm, [("The sky is", " blue")])]  # doctest: +SKIP
    """
    reqs = check_requests(requests)
    rows = check_batch_size(batch_size)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0, got {top_k!r}")
    global stats
    stats = EngineStats(requests=len(reqs))
    encs = [text.encode(lm, c, x) for c, x in reqs]
    unique: dict[tuple, int] = {}
    for e in encs:
        unique.setdefault(e.key, len(unique))
    uniq_encs = [None] * len(unique)
    for e in encs:
        uniq_encs[unique[e.key]] = e
    stats.unique = len(uniq_encs)
    store = (default_cache() if cache is True else cache) or None
    keys = [request_key(lm.fingerprint, e.input_ids, e.start) for e in uniq_encs]
    stored = store.get_many(keys) if store is not None else {}
    if top_k:  # top-k lives in memory only; the disk still supplies the scores (one value per request)
        found = {k: _TOP_CACHE[(k, top_k)] for k in keys if (k, top_k) in _TOP_CACHE}
    else:
        found = stored
    stats.cached = len(found)
    todo = [i for i, k in enumerate(keys) if k not in found]
    stats.tokens_needed = sum(len(uniq_encs[i].input_ids) - 1 for i in todo)
    stats.tokens_unique = _unique_prefix_tokens([uniq_encs[i].input_ids[:-1] for i in todo])
    head = functools.partial(_score_positions, top_k=top_k)
    computed = _run(lm, [uniq_encs[i] for i in todo], rows, progress, head) if todo else []
    fresh = {keys[i]: {"logprob": r[:, 0], "rank": r[:, 1].astype(np.int64), "entropy": r[:, 2],
                       "greedy": r[:, 1] == 1} for i, r in zip(todo, computed)}
    if store is not None:
        store.put_many({k: v for k, v in fresh.items() if k not in stored})
    if top_k:
        for i, r in zip(todo, computed):
            entry = dict(stored.get(keys[i], fresh[keys[i]]))
            entry.update(top_ids=r[:, 3:3 + top_k].astype(np.int64), top_logprobs=r[:, 3 + top_k:])
            fresh[keys[i]] = _TOP_CACHE[(keys[i], top_k)] = entry
        for k in keys:
            _TOP_CACHE.move_to_end((k, top_k))
        while len(_TOP_CACHE) > TOP_CACHE_SIZE:
            _TOP_CACHE.popitem(last=False)
    found.update(fresh)
    out = []
    for req, e in zip(reqs, encs):
        r = found[keys[unique[e.key]]]
        out.append(Scored(req, e, r["logprob"], r["rank"], r["entropy"], r["greedy"], _token_strings(lm, e),
                          r.get("top_ids"), r.get("top_logprobs")))
    return out


def clear_top_cache() -> None:
    """Empty the in-memory cache of ``logprobs(..., top_k=k)`` results."""
    _TOP_CACHE.clear()


@dataclass
class NextToken:
    """The next-token distribution after one prompt (float32 log-softmax)."""

    context: str
    input_ids: tuple[int, ...]
    selected: np.ndarray  # log-probs of the requested token ids, in their order
    top_ids: np.ndarray
    top_logprobs: np.ndarray
    top_tokens: list[str]
    entropy: float


def next_token_logprobs(
    lm: Any,
    contexts: Sequence[str],
    *,
    token_ids: Sequence[int] = (),
    top_k: int = 0,
    batch_size: int | str = "auto",
    cache: bool | ScoreCache = False,
) -> list[NextToken]:
    """The next-token log-probs after each context: chosen token ids and/or the top k.

    Runs on the plan of ``logprobs``: prompts that share a token prefix (one question under several
    option orders, one instruction before many questions) forward it once.

    Args:
        lm: a loaded ``LM``.
        contexts: prompts (the BOS/EOS rule of ``text`` applies to an empty one).
        token_ids: vocabulary ids whose log-probs are returned in ``selected``.
        top_k: how many of the most likely next tokens to return.
        batch_size: rows per batch, or "auto" (token budget, as in ``logprobs``).
        cache: use the on-disk cache (True), a given ``ScoreCache``, or none (False). The cache
            holds ``selected`` and ``entropy``; with ``top_k > 0`` every prompt is computed.
    """
    if isinstance(contexts, str):
        raise TypeError("contexts: expected a list of strings, got a single string")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k: expected an int >= 0, got {top_k!r}")
    vocab = lm.model.get_output_embeddings().weight.shape[0]
    bad = [t for t in token_ids if not isinstance(t, (int, np.integer)) or not 0 <= int(t) < vocab]
    if bad:
        raise ValueError(f"token_ids: not vocabulary ids: {bad[:5]}")
    rows = check_batch_size(batch_size)
    prompts = [text.encode_prompt(lm, text.check_text(c, f"contexts[{i}]")) for i, c in enumerate(contexts)]
    sel = [int(t) for t in token_ids]
    store = ((default_cache() if cache is True else cache) or None) if sel and not top_k else None
    tag = f"{lm.fingerprint}|next-token|{','.join(map(str, sel))}"
    keys = [request_key(tag, p, 0) for p in prompts]
    found = store.get_many(keys) if store is not None else {}
    todo = {k: p for k, p in zip(keys, prompts) if k not in found}

    head = functools.partial(_score_positions, top_k=top_k, select=sel)
    # the last prompt token is the only "scored" position: a dummy target (scores ignored) follows it
    encs = [text.Encoding("", "", p + (0,), len(p), ((0, 0),), False, 0) for p in todo.values()]
    global stats
    stats = EngineStats(requests=len(prompts), unique=len(set(keys)), cached=len(found))
    stats.tokens_needed = sum(len(p) for p in todo.values())
    stats.tokens_unique = _unique_prefix_tokens(list(todo.values()))
    computed = dict(zip(todo, (r[0] for r in _run(lm, encs, rows, False, head)))) if encs else {}
    if store is not None:
        fresh = {k: {"logprob": r[3:3 + len(sel)], "entropy": np.full(len(sel), r[2], np.float32),
                     "rank": np.zeros(len(sel), np.int64), "greedy": np.zeros(len(sel), bool)}
                 for k, r in computed.items()}
        store.put_many(fresh)
    out = []
    for c, p, k in zip(contexts, prompts, keys):
        if k in computed:
            r = computed[k]
            selected, ent = r[3:3 + len(sel)], float(r[2])
            top = r[3 + len(sel):].reshape(2, -1) if top_k else np.zeros((2, 0), np.float32)
        else:
            selected, ent, top = found[k]["logprob"], float(found[k]["entropy"][0]), np.zeros((2, 0), np.float32)
        tids = top[0].astype(np.int64)
        out.append(NextToken(c, p, selected.astype(np.float32), tids, top[1].astype(np.float32),
                             [lm.tokenizer.decode([int(t)]) for t in tids], ent))
    return out
