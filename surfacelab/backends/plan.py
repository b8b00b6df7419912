"""Planning on token ids, shared by in-process backends: which requests share a prefix, which run together.

A *job* is what one request needs forwarded: ``ids`` (every token whose output is needed: a scored
request's ``input_ids[:-1]``, or a whole prompt) and ``first``, the index in ``ids`` of the first
position whose next-token distribution is wanted. Planning never looks at text or tensors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

#: A shared prefix is reused only if it saves at least this many forwarded tokens...
REUSE_MIN_SAVED = 8
#: ... and at least this fraction of the tokens its requests would forward plainly.
REUSE_MIN_GAIN = 0.1
#: Most requests in one shared-prefix group (bounds the planning cost; a larger set is split).
GROUP_MAX = 256
#: Most tokens in one packed shared-prefix row (the prefix plus its suffixes).
ROW_MAX = 256


@dataclass(frozen=True)
class Job:
    """The tokens one request forwards and the first position whose output is scored."""

    ids: tuple[int, ...]
    first: int

    @property
    def n_scored(self) -> int:
        """Positions whose next-token distribution is wanted."""
        return len(self.ids) - self.first


def lcp(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def unique_prefix_tokens(seqs: list[tuple[int, ...]]) -> int:
    """Number of distinct non-empty prefixes among ``seqs`` (nodes of their token trie)."""
    ordered = sorted(seqs)
    return sum(len(s) - (lcp(p, s) if k else 0) for k, (p, s) in enumerate(zip([()] + ordered, ordered)))


@dataclass
class Group:
    """Jobs that run as one row: a shared prefix of ``prefix`` tokens (0 = none) and their suffixes."""

    prefix: int
    members: list[int]
    widths: list[int]  # forwarded suffix length of each member

    @property
    def length(self) -> int:
        """Tokens in the packed row: the prefix once, then every suffix."""
        return self.prefix + sum(self.widths)


def groups(jobs: list[Job], max_group: int, window: int | None) -> list[Group]:
    """Split jobs into shared-prefix groups by a cost model on token counts.

    Jobs are sorted by their reusable prefix (the tokens before the first scored position); an
    optimal split of that order into runs (dynamic programming over runs of at most ``max_group``)
    maximises the forwarded tokens saved, (k - 1) x common prefix per run, counting a run only if it
    saves at least ``REUSE_MIN_SAVED`` tokens and ``REUSE_MIN_GAIN`` of its plain cost. A run longer
    than ``ROW_MAX`` packed tokens is cut into several rows that each repeat the prefix. Everything
    else runs plainly. Jobs longer than a sliding attention window never share a prefix.
    """
    heads = [j.ids[:j.first] for j in jobs]
    eligible = [i for i, j in enumerate(jobs) if window is None or len(j.ids) < window]
    order = sorted(eligible, key=lambda i: (heads[i], jobs[i].ids))
    n = len(order)
    adjacent = np.array([lcp(heads[a], heads[b]) for a, b in zip(order, order[1:])], dtype=np.int64)
    cost = np.concatenate([[0], np.cumsum([len(jobs[i].ids) for i in order])])
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
    out: list[Group] = []
    shared: set[int] = set()
    j = n
    while j > 0:
        i = int(cut[j])
        if j - i > 1:
            p = int(adjacent[i:j - 1].min())
            row = Group(p, [], [])
            for m in order[i:j]:
                w = len(jobs[m].ids) - p
                if row.members and row.length + w > ROW_MAX:
                    out.append(row)
                    row = Group(p, [], [])
                row.members.append(m)
                row.widths.append(w)
            out.append(row)
            shared.update(order[i:j])
        j = i
    out += [Group(0, [i], [len(jb.ids)]) for i, jb in enumerate(jobs) if i not in shared]
    return out


def take(groups_: list[Group], rows: int | None, budget: int) -> int:
    """How many of ``groups_`` (sorted) form the next batch: same kind, within the request count or token budget."""
    n_req = 0
    for k, g in enumerate(groups_):
        if k and (g.prefix > 0) != (groups_[0].prefix > 0):
            return k
        n_req += len(g.members)
        width = max(groups_[0].length, g.length)
        too_short = 2 * g.length < width  # would be mostly padding: start a narrower batch
        if k and (n_req > rows if rows is not None else (k + 1) * width > budget or too_short):
            return k
    return len(groups_)
