"""Planning on token ids, for in-process backends: which requests share a prefix, how they are laid out.

A *job* is what one request needs forwarded: ``ids`` (every token whose output is needed: a scored
request's ``input_ids[:-1]``, or a whole prompt) and ``first``, the index in ``ids`` of the first
position whose next-token distribution is wanted. Planning never looks at text or tensors.

1. **Groups.** Jobs are sorted by their ids; an optimal split of that order into runs (dynamic
   programming, runs of at most ``GROUP_MAX``) maximises the forwarded tokens saved, (k - 1) x the
   run's common prefix. The prefix runs through every shared token, the context's last one
   included, so a first scored position shared by all members is computed once.
2. **Paths** (see ``arch``): where the model allows packed rows, the jobs for packed rows are laid out as
   *nested segments* (``nest``): in sorted order, each job forwards only the tokens after those it shares
   with the job before it, so a segment forwards its jobs' token trie (occluded premises that share
   their first words, options that share a first token, all under one context), cut where a segment
   would outgrow the row cap; or as *flat segments*, one group's prefix and then each member's whole
   suffix (the cheaper layout wins, step 4). Segments are packed first-fit-decreasing into rows, several
   per row; the mask lets each token see its own job's earlier tokens wherever they lie in the row. A group that
   does not fit a row, or whose model forbids packing, takes the *kv* path if it saves at least
   ``KV_MIN_SAVED`` tokens: its prefix runs once with a key/value cache and the suffixes run on it.
   Everything else runs as *plain* rows, one job per row, padded to the batch's longest.
3. **Batches** hold rows of one kind within a token budget (rows x padded length) or a request count.
4. **Cost model.** Cost = padded tokens x (1 + row length / attention span), plus ``PASS_TOKENS`` per
   forward pass; a plan is used only if it is cheaper than all-plain rows, so reuse never costs more than
   it saves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

#: Most requests in one shared-prefix group (bounds the planning cost; a larger set is split).
GROUP_MAX = 256
#: Most tokens in one packed row (further capped by the model's window and position table).
ROW_MAX = 256
#: A group takes the kv path only if it saves at least this many forwarded tokens (two passes and a
#: cache copy cost about this much).
KV_MIN_SAVED = 48
#: A group too long for one packed row repeats its prefix in several rows while the prefix is
#: shorter than this; a longer prefix takes the kv path (cost linear in the prefix).
KV_PREFIX_MIN = 64


@dataclass(frozen=True)
class Job:
    """The tokens one request forwards and the first position whose output is scored."""

    ids: tuple[int, ...]
    first: int

    @property
    def n_scored(self) -> int:
        """Positions whose next-token distribution is wanted."""
        return len(self.ids) - self.first


@dataclass
class Segment:
    """Jobs laid out together: a prefix of ``prefix`` tokens run once, then each member's own tokens.

    ``shared`` (nested segments, packed rows only): per member, how many of its first ids it shares with
    the member laid out before it (the first: ``prefix``); a member forwards only its ids after those.
    None: every member forwards its whole suffix after the prefix."""

    prefix: int
    members: list[int]
    widths: list[int]  # suffix length of each member (its ids after the prefix; may be 0)
    shared: list[int] | None = None

    @property
    def length(self) -> int:
        """Tokens this segment forwards."""
        nested = sum(self.shared) - self.prefix * len(self.shared) if self.shared else 0
        return self.prefix + sum(self.widths) - nested

    def starts(self) -> list[int]:
        """Per member, the position of its first forwarded id."""
        return list(self.shared) if self.shared else [self.prefix] * len(self.members)


@dataclass
class Batch:
    """One forward pass (two for kv): ``kind`` is "plain", "packed" or "kv"; ``rows`` are lists of segments
    (plain: one single-job segment per row; kv: one row holding the group's one segment)."""

    kind: str
    rows: list[list[Segment]] = field(default_factory=list)

    @property
    def members(self) -> list[int]:
        """The jobs this batch finishes, in layout order."""
        return [m for row in self.rows for s in row for m in s.members]

    @property
    def width(self) -> int:
        """The longest row."""
        return max(sum(s.length for s in row) for row in self.rows)


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


def groups(jobs: list[Job], max_group: int, min_saved: int) -> list[Segment]:
    """Split jobs into shared-prefix groups (one ``Segment`` each, singles included) maximising tokens saved.

    A run of k sorted jobs with common prefix p saves (k - 1) x p; runs saving less than
    ``min_saved`` are not formed.
    """
    order = sorted(range(len(jobs)), key=lambda i: jobs[i].ids)
    n = len(order)
    adjacent = np.array([lcp(jobs[a].ids, jobs[b].ids) for a, b in zip(order, order[1:])], dtype=np.int64)
    best = np.zeros(n + 1)
    cut = np.arange(-1, n, dtype=np.int64)  # cut[j]: start of the last run ending at j (default: a single)
    for j in range(1, n + 1):
        best[j] = best[j - 1]
        lo = max(0, j - max_group)
        if j - 1 <= lo:
            continue
        common = np.minimum.accumulate(adjacent[lo:j - 1][::-1])[::-1]  # common[t]: min lcp of run lo+t..j-1
        saved = (j - np.arange(lo, j - 1) - 1) * common
        saved = np.where(saved >= max(min_saved, 1), saved, 0)
        total = best[lo:j - 1] + saved
        k = int(np.argmax(total))
        if total[k] > best[j]:
            best[j], cut[j] = total[k], lo + k
    out: list[Segment] = []
    j = n
    while j > 0:
        i = int(cut[j])
        run = order[i:j]
        p = int(adjacent[i:j - 1].min()) if len(run) > 1 else 0
        out.append(Segment(p, list(run), [len(jobs[m].ids) - p for m in run]))
        j = i
    return out[::-1]


def nest(jobs: list[Job], members: list[int], cap: int) -> list[Segment]:
    """``members`` (each at most ``cap`` ids) as nested segments of at most ``cap`` forwarded tokens: in sorted
    order, each shares with the one before it their common prefix (the longest it shares with any earlier
    one), so a segment forwards its members' token trie; a segment starts wherever the next member would
    outgrow ``cap``, and forwards its prefix again."""
    order = sorted(members, key=lambda m: jobs[m].ids)
    runs: list[tuple[list[int], list[int]]] = []  # (members, shared with the one before)
    length = 0
    for k, m in enumerate(order):
        n = len(jobs[m].ids)
        common = lcp(jobs[order[k - 1]].ids, jobs[m].ids) if k else 0
        if not runs or length + n - common > cap:
            runs.append(([m], [0]))
            length = n
        else:
            runs[-1][0].append(m)
            runs[-1][1].append(common)
            length += n - common
    out = []
    for run, common in runs:
        p = min(common[1:], default=0)
        out.append(Segment(p, run, [len(jobs[m].ids) - p for m in run], [p] + common[1:] if len(run) > 1 else None))
    return out


def split(seg: Segment, cap: int) -> list[Segment]:
    """``seg`` as flat segments of at most ``cap`` tokens, each repeating the prefix (a single member stays whole)."""
    out = [Segment(seg.prefix, [], [])]
    for m, w in zip(seg.members, seg.widths):
        if out[-1].members and out[-1].length + w > cap:
            out.append(Segment(seg.prefix, [], []))
        out[-1].members.append(m)
        out[-1].widths.append(w)
    return [s if len(s.members) > 1 else Segment(0, s.members, [s.prefix + s.widths[0]]) for s in out]


def _fits_row(jobs: list[Job], seg: Segment, cap: int, window: int | None) -> bool:
    """Whether ``seg``'s members may go into packed rows (each member whole within the cap and window)."""
    longest = seg.prefix + max(seg.widths)
    return longest <= cap and (window is None or all(len(jobs[m].ids) <= window for m in seg.members))


def _pack_rows(segments: list[Segment], cap: int) -> list[list[Segment]]:
    """First-fit-decreasing of segments into rows of at most ``cap`` tokens."""
    rows: list[list[Segment]] = []
    room: list[int] = []
    for seg in sorted(segments, key=lambda s: -s.length):
        k = next((r for r, free in enumerate(room) if free >= seg.length), None)
        if k is None:
            rows.append([seg])
            room.append(cap - seg.length)
        else:
            rows[k].append(seg)
            room[k] -= seg.length
    return rows


def _batches(kind: str, rows: list[list[Segment]], max_requests: int | None, budget: int) -> list[Batch]:
    """Rows (longest first) cut into batches within ``budget`` padded tokens or ``max_requests`` requests;
    a row less than half the batch's width starts a new batch (it would be mostly padding)."""
    rows = sorted(rows, key=lambda r: -sum(s.length for s in r))
    out: list[Batch] = []
    n_req = 0
    for row in rows:
        length = sum(s.length for s in row)
        k = sum(len(s.members) for s in row)
        if out:
            b = out[-1]
            width = max(b.width, length)
            full = n_req + k > max_requests if max_requests is not None else (len(b.rows) + 1) * width > budget
            if not full and 2 * length >= width:
                b.rows.append(row)
                n_req += k
                continue
        out.append(Batch(kind, [row]))
        n_req = k
    return out


def cost(batches: list[Batch], span: int) -> float:
    """Estimated work: padded tokens x (1 + attended length / ``span``) and ``PASS_TOKENS`` a pass; a kv batch
    counts its prefix once (causal) and its suffixes against prefix + suffix, in (at least) two passes."""
    total = 0.0
    for b in batches:
        total += PASS_TOKENS * (2 if b.kind == "kv" else 1)
        if b.kind == "kv":
            seg = b.rows[0][0]
            total += seg.prefix * (1 + seg.prefix / (2 * span))
            total += sum(w * (1 + (seg.prefix + w) / span) for w in seg.widths)
        else:
            total += len(b.rows) * b.width * (1 + b.width / span)
    return total


def plain(jobs: list[Job], max_requests: int | None, budget: int) -> list[Batch]:
    """Every job in a row of its own."""
    return _batches("plain", [[Segment(0, [i], [len(j.ids)])] for i, j in enumerate(jobs)], max_requests, budget)


#: What a forward pass costs beyond its tokens, in tokens (the layers' launches and Python: about 60 ms a pass on one
#: CPU core, the time of 16-24 tokens of smollm2-135m): two rows in two passes are not cheaper than one longer row.
PASS_TOKENS = 16

#: Packed row lengths tried by ``make`` (each at most the model's row cap); the cheapest plan wins.
ROW_CAPS = (128, 256)


def make(jobs: list[Job], *, max_requests: int | None, budget: int, pack: bool, kv: bool, row_cap: int,
         window: int | None, span: int) -> list[Batch]:
    """The batches that compute ``jobs`` (see the module docstring); every job appears exactly once.

    Packed layouts are built for each row length in ``ROW_CAPS`` (capped by ``row_cap``), nested and flat (the
    groups' segments whole, first-fit-decreasing: fuller rows where the trie saves little, e.g. questions with
    five short options), and the cheapest plan by ``cost`` is used, all-plain rows included.
    """
    best = plain(jobs, max_requests, budget)
    if max_requests == 1 or not (pack or kv):
        return best
    max_group = min(GROUP_MAX, max_requests) if max_requests is not None else GROUP_MAX
    segments = groups(jobs, max_group, 1 if pack else KV_MIN_SAVED)
    caps = sorted({min(c, row_cap) for c in ROW_CAPS}) if pack else [row_cap]
    for cap in caps:
        for nested in (True, False) if pack else (False,):
            batches = _layout(jobs, segments, max_requests=max_requests, budget=budget, pack=pack, kv=kv, cap=cap,
                              window=window, nested=nested)
            if cost(batches, span) < cost(best, span):
                best = batches
    return best


def _layout(jobs: list[Job], segments: list[Segment], *, max_requests: int | None, budget: int, pack: bool,
            kv: bool, cap: int, window: int | None, nested: bool) -> list[Batch]:
    """Packed rows of at most ``cap`` tokens where allowed (``nested``: the packed jobs' trie, ``nest``; else each
    group's flat segments), kv batches for groups that do not fit, plain rows for the rest."""
    packed: list[Segment] = []
    kv_batches: list[Batch] = []
    singles: list[int] = []
    for seg in segments:
        saved = seg.prefix * (len(seg.members) - 1)
        fits = pack and _fits_row(jobs, seg, cap, window)
        if fits and (seg.length <= cap or not kv or seg.prefix < KV_PREFIX_MIN):
            packed += split(seg, cap)
        elif kv and len(seg.members) > 1 and saved >= KV_MIN_SAVED:
            kv_batches.append(Batch("kv", [[seg]]))
        else:
            singles += seg.members
    alone = [Segment(0, [m], [len(jobs[m].ids)]) for m in singles]
    packed += [s for s in alone if pack and _fits_row(jobs, s, cap, window)]
    rest = [[s] for s in alone if not (pack and _fits_row(jobs, s, cap, window))]
    if nested:
        packed = nest(jobs, [m for s in packed for m in s.members], cap)
    return (_batches("packed", _pack_rows(packed, cap), max_requests, budget) + kv_batches
            + _batches("plain", rest, max_requests, budget))


def kv_chunks(seg: Segment, budget: int, packed: bool = False) -> list[tuple[list[int], list[int]]]:
    """The members of a kv segment as (members, widths) chunks, longest suffix first. ``packed``: the
    suffixes of a chunk share one row, at most ``budget`` tokens; else each member holds a copy of the
    prefix cache and a chunk holds at most ``budget`` cached-plus-suffix tokens."""
    out: list[tuple[list[int], list[int]]] = []
    for m, w in sorted(zip(seg.members, seg.widths), key=lambda x: -x[1]):
        if out:
            ms, ws = out[-1]
            size = sum(ws) + w if packed else (len(ms) + 1) * (seg.prefix + ws[0])
            if size <= budget:
                ms.append(m)
                ws.append(w)
                continue
        out.append(([m], [w]))
    return out
