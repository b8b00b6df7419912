"""The in-process backend: a transformers causal LM on CPU, CUDA or MPS.

* **Plan, then run.** ``packing.make`` lays the requests out (plain rows, packed shared-prefix rows,
  kv prefix passes; see ``packing`` and ``arch`` for which the model allows); ``_run`` runs the batches
  in order, reports each finished batch to ``on_done`` and halves its token budget on out-of-memory.
* **Projection only where needed.** The LM head and the float32 log-softmax run only at the
  distinct positions whose next token is scored (a first scored position shared by all options of
  a question is projected once), in chunks of at most ``PROJECT_ELEMENTS`` logits.
* **Heads.** What runs at the scored positions is a *head*: per-token scores (with the top-k
  alternatives when asked), or a prompt's next-token distribution.
* **Recent contexts.** A scoring call on a few contexts (one question's, not a dataset's) keeps the
  next-token distribution after each of them, which its first scored position computed anyway:
  ``remembered`` answers a next-token prompt with the same token ids from it, with no forward (the
  Why view's "where the gold's mass went" after the scorer view's pass). Same ids, same positions:
  the same distribution, on every architecture; kept under the weights' fingerprint (an edit of the
  weights lets them go), and not at all from a call with a foreign forward hook (``base.foreign_hooks``).
* **Cancellation.** ``base.cancelled_when`` is checked before each batch and before each of the
  model's repeated blocks (a forward pre-hook on each; it changes no output, and it is the one hook
  that leaves the caches on).
* **Self-check.** Before the first call, the shortcuts (projection from the base model's hidden
  states, packed rows, the kv prefix path) are checked against a plain forward of the whole model
  on a short probe; a shortcut that disagrees is switched off (``EngineStats.rule`` says so).
"""

from __future__ import annotations

import copy
import functools
import threading
import time
from typing import Any, Callable, Sequence

import numpy as np
import torch

from . import arch, openmp, packing
from .budget import back_off, token_budget
from .recent import REMEMBER_MAX_CONTEXTS, RecentContexts
from .base import (RANK_TOL, EngineStats, NextTokenScores, OnDone, TokenScores, cancelled_when, foreign_hooks,
                   raise_if_cancelled)

#: ``head(features, inverse, targets) -> (n, width)`` float tensor for the n scored positions:
#: ``features`` are the distinct positions' final hidden states (or logits), ``inverse`` maps each
#: scored position to its row of ``features``, ``targets`` are the scored token ids (if any).
Head = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]

#: Token budget of one automatic batch of causal forwards, by device type (rows x padded length); the masked
#: copies of PLL have their own (``masked.MASKED_TOKEN_BUDGET``).
TOKEN_BUDGET = {"cpu": 4096, "mps": 16384, "cuda": 65536}


#: Most logits (positions x vocabulary) projected at once (small chunks keep the log-softmax passes in cache) ...
PROJECT_ELEMENTS = 1 << 22
#: ... but at least this many positions: each chunk streams the whole output projection (671 MB in float32 for
#: gemma-3's 262,144-token vocabulary), and 16-row chunks made that the cost (-11% CPU on gemma ARC with 128)
PROJECT_ROWS_MIN = 128
#: Largest |difference| of a probe's log-probs that a shortcut may show against a plain forward.
SELFCHECK_TOL = {torch.float32: 1e-3, torch.float64: 1e-3}
SELFCHECK_TOL_HALF = 0.25


class TransformersBackend:
    """Runs a transformers causal LM in this process (see the module docstring)."""

    kind = "transformers"
    has_entropy = True

    def __init__(self, model: Any, tokenizer: Any, device: torch.device, dtype: torch.dtype, *,
                 name: str, identity: Callable[[], str]) -> None:
        self.model = model
        self.device = device
        self.dtype = dtype
        self.name = name
        self._identity = identity
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.traits = arch.traits(model)
        self.pack, self.kv, self.rule = self.traits.pack, self.traits.kv, self.traits.why
        caps = [c for c in (packing.ROW_MAX, self.traits.window, self.traits.table) if c]
        self.row_cap = min(caps)
        self.span = 4 * int(getattr(model.config, "hidden_size", 0) or getattr(model.config, "n_embd", 0) or 512)
        self.features = "hidden"  # or "logits" when the head is not a plain projection (see warm_up)
        self._failed = ""  # how the last self-check probe failed
        self._checked = False
        self._check_lock = threading.Lock()
        self.recent = RecentContexts()  # the next-token distributions after recent contexts (``remembered``)
        for block in _blocks(model):
            block.register_forward_pre_hook(raise_if_cancelled)

    def identity(self) -> str:
        """The weights' fingerprint as they are now (``fingerprint.Fingerprint``: type, config, every weight,
        vocabulary, dtype)."""
        return self._identity()

    def score(self, encodings: Sequence[Any], *, top_k: int, batch_size: int | None, progress: bool,
              stats: EngineStats, on_done: OnDone | None = None) -> list[TokenScores]:
        """Per-token scores of every encoding (see ``base``)."""
        jobs = [packing.Job(tuple(e.input_ids[:-1]), e.start - 1) for e in encodings]
        targets = [tuple(e.scored_ids) for e in encodings]
        head = functools.partial(self._score_head, top_k=top_k)

        def convert(r: np.ndarray) -> TokenScores:
            return TokenScores(r[:, 0].copy(), r[:, 1].astype(np.int64), r[:, 2].copy(),
                               r[:, 3:3 + top_k].astype(np.int64), r[:, 3 + top_k:].copy())

        contexts = {j.ids[:j.first + 1] for j in jobs}
        # what a foreign hook made of the model is no answer for the model (``base.foreign_hooks``)
        keep = self._remember if len(contexts) <= REMEMBER_MAX_CONTEXTS and not foreign_hooks(self.model) else None
        return self._run(jobs, targets, head, convert, batch_size, progress, stats, on_done, keep)

    def next_token(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int], top_k: int,
                   batch_size: int | None, progress: bool, stats: EngineStats,
                   on_done: OnDone | None = None) -> list[NextTokenScores]:
        """The next-token distribution after every prompt (see ``base``)."""
        jobs = [packing.Job(tuple(p), len(p) - 1) for p in prompts]
        sel = [int(t) for t in token_ids]
        head = functools.partial(self._next_head, select=sel, top_k=top_k)
        convert = functools.partial(_next_scores, selected=len(sel))
        return self._run(jobs, [()] * len(jobs), head, convert, batch_size, progress, stats, on_done)

    def remembered(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int],
                   top_k: int) -> dict[int, NextTokenScores]:
        """The next-token distribution after each prompt that a recent scoring call had as a context (by its
        index in ``prompts``), as ``next_token`` returns it; the others are left out."""
        hits = self.recent.get(self.identity(), prompts)
        if not hits:
            return {}
        chosen = torch.tensor([int(t) for t in token_ids], dtype=torch.long)
        flat = self._next_columns(torch.stack(list(hits.values())), chosen, top_k).numpy()
        return {i: _next_scores(flat[k:k + 1], selected=len(chosen)) for k, i in enumerate(hits)}

    def _remember(self, jobs: list[packing.Job], rows: list[int], features: torch.Tensor) -> None:
        """Keep the next-token distribution after each job's context, from ``features[rows[k]]`` (job k's first
        scored position)."""
        identity = self.identity()
        fresh = self.recent.missing(identity, [(job.ids[:job.first + 1], r) for job, r in zip(jobs, rows)])
        if not fresh:
            return
        at = torch.tensor(list(fresh.values()), dtype=torch.long, device=features.device)
        logp = torch.cat([lp for _, _, lp in self._log_softmax_chunks(features[at])]).cpu()
        self.recent.keep(identity, dict(zip(fresh, logp)))

    # ------------------------------------------------------------------ heads

    def _log_softmax_chunks(self, features: torch.Tensor):
        """(start, stop, float32 log-softmax) over chunks of at most ``PROJECT_ELEMENTS`` logits."""
        step = max(PROJECT_ROWS_MIN, PROJECT_ELEMENTS // self.vocab_size)
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        for a in range(0, len(features), step):
            if self.features == "logits":
                logits = features[a:a + step].float()
            else:
                logits = self.model.get_output_embeddings()(features[a:a + step]).float()
                if cap:
                    logits = torch.tanh(logits / cap) * cap
            yield a, a + step, torch.log_softmax(logits, dim=-1)

    def _score_head(self, features: torch.Tensor, inverse: torch.Tensor, targets: torch.Tensor,
                    top_k: int = 0) -> torch.Tensor:
        """(n, 3 + 2 top_k) float32 rows: log-prob, rank and entropy of each target, then the ids
        (exact in float32 below 2**24) and log-probs of the top_k tokens at its position."""
        out = torch.empty((len(inverse), 3 + 2 * top_k), dtype=torch.float32, device=features.device)
        for a, b, logp in self._log_softmax_chunks(features):
            pick = ((inverse >= a) & (inverse < b)).nonzero()[:, 0]
            at = inverse[pick] - a  # row of ``logp`` of each scored position in this chunk
            rows = logp if torch.equal(at, torch.arange(len(logp), device=at.device)) else logp[at]
            lp = rows.gather(1, targets[pick, None])[:, 0]
            out[pick, 0] = lp
            out[pick, 1] = ((rows > lp[:, None] + RANK_TOL).sum(1) + 1).float()
            out[pick, 2] = -(logp.exp() * logp).sum(1)[at]
            if top_k:
                top = logp.topk(min(top_k, self.vocab_size), dim=-1)
                out[pick, 3:3 + top_k] = top.indices[at].float()
                out[pick, 3 + top_k:] = top.values[at]
        return out

    def _next_head(self, features: torch.Tensor, inverse: torch.Tensor, targets: torch.Tensor,
                   select: Sequence[int] = (), top_k: int = 0) -> torch.Tensor:
        """(n, 1 + len(select) + 2 top_k) float32 rows: entropy, the log-probs of the ``select`` ids,
        then the ids and log-probs of the top_k tokens (``targets`` is unused)."""
        chosen = torch.tensor(list(select), dtype=torch.long, device=features.device)
        parts = [self._next_columns(logp, chosen, top_k) for _, _, logp in self._log_softmax_chunks(features)]
        return torch.cat(parts)[inverse]

    def _next_columns(self, logp: torch.Tensor, chosen: torch.Tensor, top_k: int) -> torch.Tensor:
        """The next-token head's rows from log-softmax rows ``logp``."""
        cols = [-(logp.exp() * logp).sum(1, keepdim=True), logp[:, chosen]]
        if top_k:
            top = logp.topk(min(top_k, self.vocab_size), dim=-1)
            cols += [top.indices.float(), top.values]
        return torch.cat(cols, 1)

    # ------------------------------------------------------------------ forward passes

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor, **kwargs: Any) -> Any:
        """The base model (or, in "logits" mode, the whole model); returns (features, output)."""
        if self.features == "logits":
            out = self.model(input_ids=ids, attention_mask=mask, **kwargs)
            return out.logits, out
        out = self.model.base_model(input_ids=ids, attention_mask=mask, **kwargs)
        return (out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]), out

    def _rows(self, jobs: list[packing.Job], batch: packing.Batch) -> tuple[torch.Tensor, list[list[int]]]:
        """Run a plain or packed batch; returns its features (rows x width flattened) and, per member
        in ``batch.members`` order, the flat feature index of each scored position."""
        width, n = batch.width, len(batch.rows)
        ids = np.full((n, width), self.pad_id, dtype=np.int64)
        positions = np.zeros((n, width), dtype=np.int64)
        real = np.zeros((n, width), dtype=bool)
        seen = np.zeros((n, width, width), dtype=bool) if batch.kind == "packed" else None
        where: list[list[int]] = []
        for r, row in enumerate(batch.rows):
            at = 0
            for seg in row:
                path: list[tuple[int, int, int]] = []  # (row coordinate, first position, end position) per piece
                if seg.prefix:
                    path = [(at, 0, seg.prefix)]
                    self._lay(ids, positions, seen, r, at, jobs[seg.members[0]].ids[:seg.prefix], 0, [])
                    at += seg.prefix
                for m, s0 in zip(seg.members, seg.starts()):
                    job = jobs[m]
                    path = [(c, a, min(b, s0)) for c, a, b in path if a < s0]  # the tokens it shares, laid out before
                    self._lay(ids, positions, seen, r, at, job.ids[s0:], s0, path)
                    path.append((at, s0, len(job.ids)))
                    at += len(job.ids) - s0
                    where.append([r * width + next(c + j - a for c, a, b in path if a <= j < b)
                                  for j in range(job.first, len(job.ids))])
            real[r, :at] = True
        dev = self.device
        if batch.kind == "plain":
            feats, _ = self._forward(torch.from_numpy(ids).to(dev), torch.from_numpy(real).long().to(dev),
                                     use_cache=False)
        else:
            seen |= np.eye(width, dtype=bool)  # padding sees only itself (no all-masked rows)
            mask = torch.zeros(seen.shape, dtype=self.dtype).masked_fill_(~torch.from_numpy(seen),
                                                                           torch.finfo(self.dtype).min)[:, None]
            feats, _ = self._forward(torch.from_numpy(ids).to(dev), mask.to(dev),
                                     position_ids=torch.from_numpy(positions).to(dev), use_cache=False)
        return feats.reshape(n * width, -1), where

    @staticmethod
    def _lay(ids: np.ndarray, positions: np.ndarray, seen: np.ndarray | None, r: int, at: int, tokens: Sequence[int],
             first: int, path: list[tuple[int, int, int]]) -> None:
        """Write ``tokens`` (positions from ``first``) into row ``r`` at ``at``; in a packed batch each sees the
        earlier ones of them and the pieces of ``path`` (the tokens before them in their own sequence)."""
        w = len(tokens)
        ids[r, at:at + w] = tokens
        positions[r, at:at + w] = np.arange(first, first + w)
        if seen is not None and w:
            seen[r, at:at + w, at:at + w] = np.tri(w, dtype=bool)
            for c, a, b in path:
                seen[r, at:at + w, c:c + b - a] = True

    def _kv(self, jobs: list[packing.Job], batch: packing.Batch, budget: int,
            done: Callable[[list[int], torch.Tensor, list[list[int]]], None]) -> int:
        """Run a kv batch: the segment's prefix once with a cache, then its members' suffixes in chunks on
        that cache, with continued positions; ``done`` gets each chunk's members, features (the prefix's,
        then the chunk's) and scored feature indices.

        Where packed rows are exact, a chunk's suffixes share one row (4-D block mask) and the cache is
        cropped back to the prefix after it; elsewhere every suffix gets its own row on a copy of the cache
        and the model applies its own 2-D mask (ALiBi, windows). Returns the positions computed.
        """
        seg = batch.rows[0][0]
        p = seg.prefix
        prefix_ids = torch.tensor([jobs[seg.members[0]].ids[:p]], device=self.device)
        pre_feats, out = self._forward(prefix_ids, torch.ones_like(prefix_ids), use_cache=True)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        _check_cache(cache)
        pre_feats = pre_feats[0]
        room = self._kv_row_room(jobs, seg)
        packed = self.pack and room > 0
        padded = p
        for members, widths in packing.kv_chunks(seg, min(budget, room) if packed else budget, packed=packed):
            padded += sum(widths) if packed else len(widths) * max(widths)
            if max(widths) == 0:
                run = (pre_feats[:0], [])
            elif packed:
                run = self._suffix_row(jobs, members, widths, p, cache)
                cache.crop(-sum(widths))  # back to the prefix (negative: tokens to remove)
            else:
                run = self._suffix_rows(jobs, members, widths, p, copy.deepcopy(cache))
            feats, offsets = run
            where = [[j if j < p else len(pre_feats) + offsets[r] + j - p
                      for j in range(jobs[m].first, len(jobs[m].ids))]
                     for r, m in enumerate(members)]
            done(members, torch.cat([pre_feats, feats]), where)
        return padded

    def _kv_row_room(self, jobs: list[packing.Job], seg: packing.Segment) -> int:
        """Suffix tokens one row on the prefix cache may hold: the window and position table minus the prefix
        (0 if a member is longer than either, or the longest suffix does not fit). A sliding cache keeps
        window - 1 tokens, so a row stays below the window to be cropped back exactly."""
        limit = min(c for c in ((self.traits.window or 0) - 1, self.traits.table or 0, 1 << 30) if c > 0)
        room = limit - seg.prefix
        fits = all(len(jobs[m].ids) <= limit for m in seg.members) and max(seg.widths) <= room
        return room if fits else 0

    def _suffix_row(self, jobs: list[packing.Job], members: list[int], widths: list[int], p: int,
                    cache: Any) -> tuple[torch.Tensor, list[int]]:
        """All suffixes of a chunk in one row on the prefix cache: each sees the prefix and itself."""
        ids = np.concatenate([np.asarray(jobs[m].ids[p:], dtype=np.int64) for m in members])
        positions = np.concatenate([np.arange(p, p + w) for w in widths])
        block = np.repeat(np.arange(1, len(members) + 1), widths)
        key = np.concatenate([np.zeros(p, dtype=np.int64), block])  # 0: the prefix in the cache
        seen = torch.from_numpy((key[None, :] == 0) | (key[None, :] == block[:, None]))
        seen[:, p:] &= torch.ones(len(block), len(block), dtype=torch.bool).tril()
        mask = torch.zeros(seen.shape, dtype=self.dtype).masked_fill_(~seen, torch.finfo(self.dtype).min)
        dev = self.device
        feats, _ = self._forward(torch.from_numpy(ids)[None].to(dev), mask[None, None].to(dev), use_cache=True,
                                 position_ids=torch.from_numpy(positions)[None].to(dev),
                                 **{self.traits.cache_arg: cache})
        return feats[0], list(np.concatenate([[0], np.cumsum(widths)[:-1]]))

    def _suffix_rows(self, jobs: list[packing.Job], members: list[int], widths: list[int], p: int,
                     cache: Any) -> tuple[torch.Tensor, list[int]]:
        """One row per suffix on copies of the prefix cache, right-padded, under the model's own 2-D mask."""
        n, w_max = len(members), max(widths)
        ids = np.full((n, w_max), self.pad_id, dtype=np.int64)
        mask = np.zeros((n, p + w_max), dtype=np.int64)
        mask[:, :p] = 1
        for r, (m, w) in enumerate(zip(members, widths)):
            ids[r, :w] = jobs[m].ids[p:]
            mask[r, p:p + w] = 1
        cache.batch_repeat_interleave(n)
        dev = self.device
        extra = {"position_ids": torch.arange(p, p + w_max, device=dev).expand(n, -1)} if self.traits.positions else {}
        feats, _ = self._forward(torch.from_numpy(ids).to(dev), torch.from_numpy(mask).to(dev), use_cache=True,
                                 **{self.traits.cache_arg: cache}, **extra)
        return feats.reshape(n * w_max, -1), [r * w_max for r in range(n)]

    # ------------------------------------------------------------------ the loop

    def _execute(self, jobs: list[packing.Job], batch: packing.Batch, budget: int, stats: EngineStats,
                 finish: Callable[[list[int], torch.Tensor, list[list[int]]], None]) -> None:
        """Run one planned batch, count it in ``stats`` and hand its features to ``finish``."""
        members = batch.members
        if batch.kind == "kv":
            stats.tokens_forwarded += batch.rows[0][0].length
            stats.tokens_padded += self._kv(jobs, batch, budget, finish)
            stats.prefix_groups += 1
            stats.reused += len(members)
        else:
            feats, where = self._rows(jobs, batch)
            stats.tokens_forwarded += sum(s.length for row in batch.rows for s in row)
            stats.tokens_padded += len(batch.rows) * batch.width
            for seg in (s for row in batch.rows for s in row):  # the distinct prefixes later members run on
                starts = seg.starts()
                reused = {jobs[m].ids[:a] for m, a in zip(seg.members[1:], starts[1:]) if a}
                stats.prefix_groups += len(reused)
                # the requests that share a prefix: each one that runs on an earlier one's tokens, and that one
                stats.reused += sum(1 for k in range(len(starts))
                                    if starts[k] or (k + 1 < len(starts) and starts[k + 1]))
            finish(members, feats, where)
        stats.count_path(batch.kind, len(members))
        stats.batches += 1

    def _run(self, jobs: list[packing.Job], targets: list[tuple[int, ...]], head: Head,
             convert: Callable[[np.ndarray], Any], rows: int | None, progress: bool, stats: EngineStats,
             on_done: OnDone | None, keep: Callable[[list[packing.Job], list[int], torch.Tensor], None] | None = None
             ) -> list[Any]:
        """``convert``ed head rows of every job, in order; each finished batch is reported to ``on_done``.
        An out-of-memory error halves the automatic token budget and re-plans the unfinished jobs. ``keep``: gets
        each batch's jobs, the feature row of each one's first scored position and the features."""
        from tqdm.auto import tqdm

        self.warm_up()
        stats.backend, stats.rule = self.kind, self.rule
        budget = token_budget(TOKEN_BUDGET, self.device, self.model.config)
        results: list[Any] = [None] * len(jobs)
        bar = tqdm(total=len(jobs), desc=f"scoring ({self.name})", unit="req", disable=not progress or len(jobs) < 64)
        todo = list(range(len(jobs)))

        def finish(members: list[int], feats: torch.Tensor, where: list[list[int]]) -> None:
            index = torch.tensor([i for w in where for i in w], dtype=torch.long, device=feats.device)
            unique, inverse = torch.unique(index, return_inverse=True)
            tgt = torch.tensor([t for m in members for t in targets[todo[m]]], dtype=torch.long, device=feats.device)
            flat = head(feats[unique], inverse, tgt).float().cpu().numpy()
            stats.tokens_scored += len(unique)
            if keep is not None:
                keep([jobs[todo[m]] for m in members], [w[0] for w in where], feats)
            at, done = 0, []
            for m, w in zip(members, where):
                results[todo[m]] = convert(flat[at:at + len(w)])
                done.append(todo[m])
                at += len(w)
            if on_done is not None:
                on_done(done, [results[i] for i in done])
            bar.update(len(done))

        with torch.inference_mode():
            while todo:
                sub = [jobs[i] for i in todo]
                t0 = time.perf_counter()
                batches = packing.make(sub, max_requests=rows, budget=budget, pack=self.pack, kv=self.kv,
                                    row_cap=self.row_cap, window=self.traits.window, span=self.span)
                stats.plan_seconds += time.perf_counter() - t0
                try:
                    for batch in batches:
                        raise_if_cancelled()
                        self._execute(sub, batch, budget, stats, finish)
                except torch.OutOfMemoryError:
                    budget = back_off(budget, self.device, fixed=rows is not None or len(batch.members) == 1,
                                      floor=32)
                    stats.oom_backoffs += 1
                todo = [i for i in todo if results[i] is None]
        bar.close()
        openmp.release()
        return results

    # ------------------------------------------------------------------ self-check

    def warm_up(self) -> None:
        """The self-check: the shortcuts against a plain forward of the whole model on a short probe, once, on one
        torch thread (the probes are short: a second thread only waits for a core)."""
        with self._check_lock:
            if self._checked:
                return
            self._checked = True
            # a cancelled probe would read as a failed shortcut
            with torch.inference_mode(), cancelled_when(None), openmp.torch_threads(1, torch.get_num_threads()):
                self._check_shortcuts()
            openmp.release()

    def _check_shortcuts(self) -> None:
        g = torch.Generator().manual_seed(0)
        ids = [t for t in torch.randint(3, max(4, self.vocab_size), (12,), generator=g).tolist() if t != self.pad_id]
        ids = (ids * 2)[:8]
        other = [t for t in ids if t != ids[5]][:1]  # none on a vocabulary of one usable id: then a prefix of the first
        # the last shares 5 ids with the first, 4 with the second: nested
        jobs = [packing.Job(tuple(ids[:6]), 3), packing.Job(tuple(ids[:4] + ids[6:8]), 3),
                packing.Job(tuple(ids[2:8]), 2), packing.Job(tuple(ids[:5] + other), 4)]
        ref = []
        for j in jobs:
            out = self.model(input_ids=torch.tensor([j.ids], device=self.device))
            ref.append(torch.log_softmax(out.logits[0, j.first:].float(), -1))
        ref = torch.cat(ref)
        tol = SELFCHECK_TOL.get(self.dtype, SELFCHECK_TOL_HALF)
        plain_batch = packing.Batch("plain", [[packing.Segment(0, [i], [len(j.ids)])] for i, j in enumerate(jobs)])
        if self._probe_error(jobs, plain_batch, ref) > tol:
            self.features = "logits"  # the head is more than a projection (logit scaling, ...)
        shared = packing.Segment(4, [0, 1], [2, 2])
        if self.pack:
            row = [*packing.nest(jobs, [0, 1, 3], len(ids) * 3), packing.Segment(0, [2], [6])]
            err = self._probe_error(jobs, packing.Batch("packed", [row]), ref)
            if err > tol:
                self.pack, self.rule = False, f"no packed rows: they {self._failed}"
        if self.kv:
            err = self._probe_error(jobs, packing.Batch("kv", [[shared]]), ref[:6])
            if err > tol:
                self.kv = False
                self.rule += f"; no kv prefix path: it {self._failed}"

    def _probe_error(self, jobs: list[packing.Job], batch: packing.Batch, ref: torch.Tensor) -> float:
        """Largest |log-prob difference| of ``batch`` from ``ref`` (inf if the path fails); ``_failed`` says how."""
        got: dict[int, torch.Tensor] = {}

        def keep(members: list[int], feats: torch.Tensor, where: list[list[int]]) -> None:
            for m, w in zip(members, where):
                got[m] = torch.cat([lp for _, _, lp in self._log_softmax_chunks(feats[torch.tensor(w)])])

        try:
            if batch.kind == "kv":
                self._kv(jobs, batch, 1 << 20, keep)
            else:
                keep(batch.members, *self._rows(jobs, batch))
            mine = torch.cat([got[m] for m in sorted(got)])
        except Exception as err:  # any failure of a shortcut means: do not use it
            self._failed = f"failed on a probe ({type(err).__name__}: {str(err)[:120]})"
            return float("inf")
        diff = float((mine - ref.to(mine.device)).abs().max())
        self._failed = f"disagreed with a plain forward on a probe (max |Δ| {diff:.1e})"
        return diff


def _blocks(model: Any) -> list[Any]:
    """The model's repeated blocks: the longest ``ModuleList`` of modules of one type (the decoder layers)."""
    best: list[Any] = []
    for m in model.modules():
        if isinstance(m, torch.nn.ModuleList) and len(m) > len(best) and len({type(x) for x in m}) == 1:
            best = list(m)
    return best


def _next_scores(r: np.ndarray, *, selected: int) -> NextTokenScores:
    """``NextTokenScores`` from a next-token head row (in a (1, width) array) with ``selected`` chosen ids."""
    row = r[0]
    top = row[1 + selected:].reshape(2, -1)
    return NextTokenScores(row[1:1 + selected].copy(), float(row[0]), top[0].astype(np.int64), top[1].copy())


def _check_cache(cache: Any) -> None:
    """The kv path copies and repeats a cache: only a cache of plain (or sliding) attention layers will do."""
    layers = getattr(cache, "layers", None)
    if layers is None or not hasattr(cache, "batch_repeat_interleave"):
        raise TypeError(f"kv prefix path: unsupported cache {type(cache).__name__}")
    for layer in layers:
        if type(layer).__name__ not in ("DynamicLayer", "DynamicSlidingWindowLayer"):
            raise TypeError(f"kv prefix path: unsupported cache layer {type(layer).__name__}")
