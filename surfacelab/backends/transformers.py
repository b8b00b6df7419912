"""The in-process backend: a transformers causal LM on CPU, CUDA or MPS.

* **Shared-prefix reuse.** Jobs (``plan.Job``) are sorted by token ids and split into groups that
  share a token prefix (all options of one question, every option under one domain premise). A
  group runs as one packed row: the prefix once, then every member's suffix, with position ids
  restarting after the prefix for each suffix and a 4-D attention mask that lets a suffix see the
  prefix and itself only. Groups are chosen by a cost model on token counts (``plan.groups``).
* **Batching by token count.** Batches are planned by a token budget (``TOKEN_BUDGET``) or a row
  count; the automatic budget halves on an out-of-memory error and resets on every call.
* **Projection only where needed.** The LM head and the float32 log-softmax run only at positions
  whose next token is scored, in chunks of at most ``PROJECT_ELEMENTS`` logits.
* **One plan, several heads.** What runs at the scored positions is a *head*: per-token scores
  (with the top-k alternatives when asked), or a prompt's next-token distribution.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np
import torch

from . import plan
from .base import RANK_TOL, EngineStats, NextTokenScores, OnDone, TokenScores

#: ``head(hidden, targets) -> (n, width)`` float tensor: what a run computes at the n scored positions
#: of a batch from their final hidden states (and target token ids, where the head scores targets).
Head = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]

#: Token budget of one automatic batch, by device type (rows x padded length).
TOKEN_BUDGET = {"cpu": 4096, "mps": 16384, "cuda": 65536}
#: Most logits (positions x vocabulary) projected at once.
PROJECT_ELEMENTS = 1 << 25


class TransformersBackend:
    """Runs a transformers causal LM in this process (see the module docstring)."""

    kind = "transformers"
    has_entropy = True

    def __init__(self, model: Any, tokenizer: Any, device: torch.device, dtype: torch.dtype, *,
                 name: str, identity: str) -> None:
        self.model = model
        self.device = device
        self.dtype = dtype
        self.name = name
        self._identity = identity
        self.vocab_size = int(model.get_output_embeddings().weight.shape[0])
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def identity(self) -> str:
        """The weights' fingerprint (type, config, sampled weights, vocabulary, dtype)."""
        return self._identity

    def score(self, encodings: Sequence[Any], *, top_k: int, batch_size: int | None, progress: bool,
              stats: EngineStats, on_done: OnDone | None = None) -> list[TokenScores]:
        """Per-token scores of every encoding (see ``base``)."""
        jobs = [plan.Job(tuple(e.input_ids[:-1]), e.start - 1) for e in encodings]
        targets = [tuple(e.scored_ids) for e in encodings]
        head = functools.partial(self._score_head, top_k=top_k)

        def convert(r: np.ndarray) -> TokenScores:
            return TokenScores(r[:, 0].copy(), r[:, 1].astype(np.int64), r[:, 2].copy(),
                               r[:, 3:3 + top_k].astype(np.int64), r[:, 3 + top_k:].copy())

        return self._run(jobs, targets, head, convert, batch_size, progress, stats, on_done)

    def next_token(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int], top_k: int,
                   batch_size: int | None, progress: bool, stats: EngineStats,
                   on_done: OnDone | None = None) -> list[NextTokenScores]:
        """The next-token distribution after every prompt (see ``base``)."""
        jobs = [plan.Job(tuple(p), len(p) - 1) for p in prompts]
        sel = [int(t) for t in token_ids]
        head = functools.partial(self._next_head, select=sel, top_k=top_k)

        def convert(r: np.ndarray) -> NextTokenScores:
            row = r[0]
            top = row[1 + len(sel):].reshape(2, -1)
            return NextTokenScores(row[1:1 + len(sel)].copy(), float(row[0]), top[0].astype(np.int64),
                                   top[1].copy())

        return self._run(jobs, [()] * len(jobs), head, convert, batch_size, progress, stats, on_done)

    # ------------------------------------------------------------------ heads

    def _project(self, hidden: torch.Tensor) -> torch.Tensor:
        """Vocabulary logits for selected hidden states, in float32 (applies final soft-capping)."""
        logits = self.model.get_output_embeddings()(hidden).float()
        cap = getattr(self.model.config, "final_logit_softcapping", None)
        if cap:
            logits = torch.tanh(logits / cap) * cap
        return logits

    def _log_softmax_chunks(self, hidden: torch.Tensor):
        """(start, float32 log-softmax) over chunks of at most ``PROJECT_ELEMENTS`` logits."""
        step = max(1, PROJECT_ELEMENTS // self.vocab_size)
        for a in range(0, len(hidden), step):
            yield a, step, torch.log_softmax(self._project(hidden[a:a + step]), dim=-1)

    def _score_head(self, hidden: torch.Tensor, targets: torch.Tensor, top_k: int = 0) -> torch.Tensor:
        """(n, 3 + 2 top_k) float32 rows: log-prob, rank and entropy of ``targets`` after each hidden
        state, then the ids (exact in float32 below 2**24) and log-probs of the top_k tokens."""
        parts = []
        for a, step, logp in self._log_softmax_chunks(hidden):
            lp = logp.gather(1, targets[a:a + step, None])[:, 0]
            rank = (logp > lp[:, None] + RANK_TOL).sum(1) + 1
            entropy = -(logp.exp() * logp).sum(1)
            cols = [torch.stack([lp, rank.float(), entropy], 1)]
            if top_k:
                top = logp.topk(min(top_k, self.vocab_size), dim=-1)
                cols += [top.indices.float(), top.values]
            parts.append(torch.cat(cols, 1))
        return torch.cat(parts)

    def _next_head(self, hidden: torch.Tensor, targets: torch.Tensor, select: Sequence[int] = (),
                   top_k: int = 0) -> torch.Tensor:
        """(n, 1 + len(select) + 2 top_k) float32 rows: entropy, the log-probs of the ``select`` ids,
        then the ids and log-probs of the top_k tokens (``targets`` is unused)."""
        chosen = torch.tensor(list(select), dtype=torch.long, device=hidden.device)
        parts = []
        for _, _, logp in self._log_softmax_chunks(hidden):
            cols = [-(logp.exp() * logp).sum(1, keepdim=True), logp[:, chosen]]
            if top_k:
                top = logp.topk(min(top_k, self.vocab_size), dim=-1)
                cols += [top.indices.float(), top.values]
            parts.append(torch.cat(cols, 1))
        return torch.cat(parts)

    # ------------------------------------------------------------------ running

    def _hidden(self, ids: torch.Tensor, mask: torch.Tensor, **kwargs: Any) -> torch.Tensor:
        """Final hidden states of the base transformer (no LM head, no cache)."""
        out = self.model.base_model(input_ids=ids, attention_mask=mask, use_cache=False, **kwargs)
        return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]

    def _batch(self, jobs: list[plan.Job], targets: list[tuple[int, ...]], groups: list[plan.Group],
               head: Head, stats: EngineStats) -> torch.Tensor:
        """Run one batch of groups, one row each, and ``head`` at the scored positions; results follow
        the groups' member order.

        A plain row is the job's ids under the model's own causal mask. A shared-prefix row packs
        the prefix once and then every member's suffix, with position ids restarting after the
        prefix for each suffix and a 4-D mask letting each suffix see the prefix and itself only.
        """
        dev = self.device
        width = max(g.length for g in groups)
        ids = torch.full((len(groups), width), self.pad_id, dtype=torch.long)
        positions = torch.zeros((len(groups), width), dtype=torch.long)
        block = torch.full((len(groups), width), -1, dtype=torch.long)  # 0 prefix, i+1 suffix i, -1 pad
        rows, cols, tgt = [], [], []
        for r, g in enumerate(groups):
            first = jobs[g.members[0]].ids
            ids[r, :g.prefix] = torch.tensor(first[:g.prefix], dtype=torch.long)
            positions[r, :g.prefix] = torch.arange(g.prefix)
            block[r, :g.prefix] = 0
            at = g.prefix
            for i, (m, w) in enumerate(zip(g.members, g.widths)):
                j = jobs[m]
                ids[r, at:at + w] = torch.tensor(j.ids[g.prefix:], dtype=torch.long)
                positions[r, at:at + w] = torch.arange(g.prefix, g.prefix + w)
                block[r, at:at + w] = i + 1
                rows += [r] * j.n_scored
                cols += range(at + j.first - g.prefix, at + w)
                tgt += targets[m]
                at += w
        if groups[0].prefix:
            causal = torch.ones(width, width, dtype=torch.bool).tril()
            seen = causal & ((block[:, None, :] == 0) | (block[:, None, :] == block[:, :, None]))
            mask = torch.zeros(seen.shape, dtype=self.dtype).masked_fill_(~seen, torch.finfo(self.dtype).min)
            hidden = self._hidden(ids.to(dev), mask[:, None].to(dev), position_ids=positions.to(dev))
            stats.prefix_groups += len(groups)
            stats.reused += sum(len(g.members) for g in groups)
            stats.count_path("packed", sum(len(g.members) for g in groups))
        else:
            hidden = self._hidden(ids.to(dev), (block >= 0).long().to(dev))
            stats.count_path("plain", len(groups))
        picked = hidden[torch.tensor(rows, device=dev), torch.tensor(cols, device=dev)]
        stats.tokens_forwarded += sum(g.length for g in groups)
        stats.tokens_padded += ids.numel()
        stats.tokens_scored += len(rows)
        return head(picked, torch.tensor(tgt, dtype=torch.long, device=dev))

    def _run(self, jobs: list[plan.Job], targets: list[tuple[int, ...]], head: Head,
             convert: Callable[[np.ndarray], Any], rows: int | None, progress: bool, stats: EngineStats,
             on_done: OnDone | None) -> list[Any]:
        """``convert``ed head rows of every job, in order; each finished batch is reported to ``on_done``.
        Automatic batches halve their token budget on out-of-memory."""
        from tqdm.auto import tqdm

        stats.backend = self.kind
        window = getattr(self.model.config, "sliding_window", None)
        max_group = min(plan.GROUP_MAX, rows) if rows is not None else plan.GROUP_MAX
        groups = plan.groups(jobs, max_group, window if isinstance(window, int) and window > 0 else None)
        groups.sort(key=lambda g: (g.prefix == 0, -g.length))
        budget = TOKEN_BUDGET.get(self.device.type, 4096)
        results: list[Any] = [None] * len(jobs)
        done = 0
        bar = tqdm(total=len(jobs), desc=f"scoring ({self.name})", unit="req",
                   disable=not progress or len(jobs) < 64)
        with torch.inference_mode():
            while done < len(groups):
                k = plan.take(groups[done:], rows, budget)
                batch = groups[done:done + k]
                try:
                    out = self._batch(jobs, targets, batch, head, stats)
                except torch.OutOfMemoryError:
                    if rows is not None or (k == 1 and len(batch[0].members) == 1):
                        raise
                    if k == 1:  # one shared-prefix group too large: run it as two halves
                        g, h = batch[0], len(batch[0].members) // 2
                        groups[done:done + 1] = [plan.Group(g.prefix, g.members[:h], g.widths[:h]),
                                                 plan.Group(g.prefix, g.members[h:], g.widths[h:])]
                    budget //= 2
                    stats.oom_backoffs += 1
                    if self.device.type == "cuda":
                        torch.cuda.empty_cache()
                    continue
                flat = out.float().cpu().numpy()
                finished, at = [m for g in batch for m in g.members], 0
                for m in finished:
                    n = jobs[m].n_scored
                    results[m] = convert(flat[at:at + n])
                    at += n
                if on_done is not None:
                    on_done(finished, [results[m] for m in finished])
                done += k
                stats.batches += 1
                bar.update(len(finished))
        bar.close()
        return results
