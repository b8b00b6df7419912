"""vLLM's token route, ``POST /inference/v1/generate``: scoring that reads the server's prefix cache.

vLLM does not read its prefix cache for a request that asks for prompt log-probs, unless the request says
``skip_reading_prefix_cache: false``, which only this route takes (it takes token ids and a whole
``SamplingParams``; served with ``--enable-scale-out``). Its answer's ``usage.prompt_tokens_details.cached_tokens``
(served with ``--enable-prompt-tokens-details``) says how many of the prompt's first tokens came from the cache: C,
whole blocks, at most the prompt less one token. The row of prompt position p (log P(ids[p] | ids[:p])) needs the
model's output at position p - 1, which was computed only if p > C:

* vLLM's CPU and GPU (V1) runners answer one row per prompt position, and the rows up to C are uninitialised memory
  (any token, any number, possibly one that passes every check);
* the GPU (V2) runner answers only the computed rows, after one placeholder: rows C + 1 .. N - 1 at 1 .. N - C - 1.

So an answer is read only as one of those two layouts (its length says which), only at rows p > C and only if every
such row is keyed by the prompt's own token at p (``read_rows``); the continuation's rows must all lie there and pass
the answer checks of ``vllm_checks``. Anything else is ``Untrusted``: the request is sent again with the cache off
(every row computed), so a layout this module does not know is never read as scores. The CPU build also refuses some
requests that read the cache (HTTP 400, "Out of range float values are not JSON compliant": an uninitialised row holds
a NaN or an infinity); those are tried again (``READ_TRIES`` in all; each computes only the prompt past its hit), then
sent with the cache off. The cache is no longer read after
``UNTRUSTED_LIMIT`` answers that did not check out, or that many refusals if they are half the requests or more.

A request goes once the request it shares the most whole blocks with has been answered (``cache_order``), so its
shared context is computed once and read from the cache by the rest. Where options begin alike, a hit can reach past
the context into rows the request needs (row p depends only on the tokens up to p): those rows are taken from an
answered request of the same call that shares the tokens up to the hit's last row (``Answered``), the rest read past
the hit as above. What a server offers is probed once, when the
backend connects (``probe``): the route, the cached-token count, a cache hit on a repeated prompt whose rows equal
those of the same prompt computed whole, and the block size (from ``/metrics``, else from the hit).
"""

from __future__ import annotations

import math
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .base import OnDone, TokenScores
from .packing import lcp
from .transport import ServerError, Transport
from .vllm_checks import ImpossibleAnswer, one_line, read_prompt_logprobs

#: The route, under the server's root.
ROUTE = "/inference/v1/generate"
#: The server flags that open it and report cached tokens (prefix caching is on by default).
FLAGS = "--enable-scale-out --enable-prompt-tokens-details"
#: Tokens of the connect-time probe: two blocks of 256, so that the usual block sizes give a hit.
PROBE_TOKENS = 520
#: Largest |difference| allowed between the probe's rows read past a hit and the same rows computed whole (another
#: kernel may round differently; rows of another position or uninitialised memory are far off).
PROBE_TOL = 0.05
#: Tries of the probe's request that reads the cache.
PROBE_TRIES = 3
#: Tries of a request that reads the cache and is refused, before it is sent with the cache off.
READ_TRIES = 3
#: Requests in flight at once on the route (one prompt per call).
IN_FLIGHT = 32
#: Answers whose rows do not check out before the backend stops reading the cache.
UNTRUSTED_LIMIT = 8


class Untrusted(ValueError):
    """An answer whose rows cannot be read as the prompt's scores: its hit covers rows the continuation needs
    (``covered``), its layout or a row is not the prompt's, or a row holds a value no model gives (``impossible``,
    the check's own error)."""

    def __init__(self, message: str, *, covered: bool = False, impossible: ImpossibleAnswer | None = None) -> None:
        super().__init__(message)
        self.covered, self.impossible = covered, impossible


@dataclass(frozen=True)
class Capabilities:
    """What a server's token route offers, probed once (``probe``).

    Attributes:
        route: it answers ``POST /inference/v1/generate``.
        cached_tokens: its answers say how many prompt tokens came from the prefix cache.
        block_size: tokens per cache block (0: no hit seen); the route's rows are read only when it is known.
        note: why prefix reuse is off and which flags turn it on ("" when on).
    """

    route: bool = False
    cached_tokens: bool = False
    block_size: int = 0
    note: str = ""

    @property
    def reads_cache(self) -> bool:
        """Whether scoring can read the prefix cache."""
        return self.route and self.cached_tokens and self.block_size > 0


def body(served_model: str, ids: Sequence[int], top_k: int, *, read_cache: bool) -> dict:
    """The route's request for the prompt log-probs of ``ids`` (and the top ``top_k``, at least 1)."""
    return {"model": served_model, "token_ids": list(ids),
            "sampling_params": {"max_tokens": 1, "temperature": 0.0, "prompt_logprobs": max(top_k, 1),
                                "skip_reading_prefix_cache": not read_cache, "detokenize": False}}


def cached_of(answer: Any) -> int | None:
    """The answer's ``usage.prompt_tokens_details.cached_tokens`` (None where it has none)."""
    try:
        value = answer["usage"]["prompt_tokens_details"]["cached_tokens"]
    except (KeyError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def read_rows(answer: Any, ids: Sequence[int], start: int, top_k: int) -> tuple[TokenScores, int]:
    """The scores of ``ids[start:]`` in a route answer and its cached-token count C (see the module docstring).

    Raises:
        Untrusted: C unknown or at least ``start``; the answer's length fits neither layout; a row past C is not
            keyed by the prompt's token; a continuation row is malformed or impossible (``vllm_checks``).
    """
    n = len(ids)
    cached = cached_of(answer)
    if cached is None:
        raise Untrusted("no usage.prompt_tokens_details.cached_tokens")
    usage = answer["usage"].get("prompt_tokens")
    if usage != n:
        raise Untrusted(f"usage counts {usage!r} prompt tokens for a prompt of {n}")
    if cached >= start:
        raise Untrusted(f"{cached} prompt tokens came from the cache, so the continuation's rows from {start} on "
                        "were not all computed", covered=True)
    rows = answer.get("prompt_logprobs")
    if not isinstance(rows, list):
        raise Untrusted(f"prompt_logprobs is {one_line(repr(rows), 40)}")
    offset = n - len(rows)
    if offset not in (0, cached):
        raise Untrusted(f"{len(rows)} rows for a prompt of {n} tokens with {cached} from the cache: neither one per "
                        f"position ({n}) nor the computed ones after a placeholder ({n - cached})")
    for p in range(cached + 1, n):
        row = rows[p - offset]
        if not isinstance(row, dict) or str(ids[p]) not in row:
            raise Untrusted(f"the row of prompt position {p} is not keyed by the prompt's token {ids[p]}")
    try:
        return read_prompt_logprobs({"prompt_logprobs": rows}, ids, start, top_k, offset=offset), cached
    except ImpossibleAnswer as err:
        raise Untrusted(str(err), impossible=err) from None
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise Untrusted(f"{type(err).__name__}: {err}") from None


def cache_order(seqs: Sequence[Sequence[int]], starts: Sequence[int],
                block: int) -> tuple[list[int], list[int | None], list[bool], list[int]]:
    """The order in which to send scoring requests to a server that caches whole blocks of ``block`` tokens of the
    prompts it computed, so that each finds the longest prefix it can use already computed.

    Returns:
        ``order``: the requests sorted by token ids. ``after[k]``: the position (in ``order``) of the earliest request
        sharing the longest prefix with request ``order[k]``, to be answered first; None where it would share no
        whole block. ``hits[k]``: the prompt tokens it is expected to find in the cache (0 where it goes whole). A
        hit that reaches the continuation covers rows the request needs (row p needs position p - 1 computed); their
        rows are taken from the request it waits for, which shares their tokens, unless the hit ends exactly where
        the two part (the row at the hit is then neither computed nor shared): ``whole[k]``, it goes at once with the
        cache off.

    >>> cache_order([(1, 2, 3, 4, 9), (1, 2, 3, 4, 5), (1, 2, 3, 4, 5, 6)], [4, 4, 4], block=2)
    ([1, 2, 0], [None, 0, None], [False, False, True], [0, 4, 0])
    """
    order = sorted(range(len(seqs)), key=lambda i: tuple(seqs[i]))
    after: list[int | None] = []
    whole: list[bool] = []
    hits: list[int] = []
    below: list[tuple[int, int]] = []  # (shared with its predecessor, position), shared increasing
    for k, i in enumerate(order):
        shared = lcp(seqs[order[k - 1]], seqs[i]) if k else -1
        while below and below[-1][0] >= shared:
            below.pop()
        first = below[-1][1] if below else None  # every request between it and this one shares >= `shared`
        below.append((shared, k))
        hit = (max(0, min(shared, len(seqs[i]) - 1)) // block) * block
        unusable = 0 < hit and starts[i] <= hit == shared
        after.append(first if 0 < hit and not unusable else None)
        whole.append(unusable)
        hits.append(0 if unusable else hit)
    return order, after, whole, hits


class Answered:
    """The answered requests of one scoring call, by position in ``cache_order``'s order (``seqs``, ``starts``: their
    token ids and first scored positions in that order), for a request whose cache hit covers rows it needs: the
    same rows of an answered request that shares the tokens up to them (row p depends only on ``ids[:p + 1]``)."""

    def __init__(self, seqs: Sequence[Sequence[int]], starts: Sequence[int]) -> None:
        self.seqs, self.starts = seqs, starts
        self.scores: dict[int, TokenScores] = {}
        self._lock = threading.Lock()

    def add(self, k: int, scores: TokenScores) -> None:
        """Request ``k`` was answered with ``scores`` (checked)."""
        with self._lock:
            self.scores[k] = scores

    def rows(self, k: int, first: int, stop: int) -> TokenScores | None:
        """Rows ``first .. stop - 1`` of request ``k``, from an answered request that shares its first ``stop``
        tokens and was scored from ``first`` or before; None where none has been answered. Sorted by token ids,
        the requests sharing at least ``stop`` tokens with ``k`` are its neighbours on either side."""
        seq = self.seqs[k]
        for step in (-1, 1):
            j = k + step
            while 0 <= j < len(self.seqs) and lcp(self.seqs[j], seq) >= stop:
                with self._lock:
                    got = self.scores.get(j)
                if got is not None and self.starts[j] <= first:
                    a, b = first - self.starts[j], stop - self.starts[j]
                    return TokenScores(got.logprob[a:b], got.rank[a:b], got.entropy[a:b], got.top_ids[a:b],
                                       got.top_logprobs[a:b])
                j += step
        return None


def joined(head: TokenScores, tail: TokenScores) -> TokenScores:
    """The rows of ``head`` followed by those of ``tail``."""
    return TokenScores(*(np.concatenate([getattr(head, f), getattr(tail, f)])
                         for f in ("logprob", "rank", "entropy", "top_ids", "top_logprobs")))


def block_from_metrics(text: str) -> int:
    """The cache block size in vLLM's ``/metrics`` (``vllm:cache_config_info{...block_size="32"...}``); 0 if none."""
    found = re.search(r'^vllm:cache_config_info\{[^}]*\bblock_size="(\d+)"', text, re.M)
    return int(found.group(1)) if found else 0


def prompt_tokens(metrics: str) -> tuple[int, int]:
    """The prompt tokens a vLLM server was sent and those it read from its prefix cache, from its ``/metrics``
    (``vllm:prompt_tokens_total`` and ``vllm:prompt_tokens_cached_total``, summed over its engines); what it
    computed is the difference.

    >>> prompt_tokens('vllm:prompt_tokens_total{engine="0"} 4438.0\\nvllm:prompt_tokens_cached_total 3328.0')
    (4438, 3328)
    """
    def total(name: str) -> int:
        return int(sum(float(v) for v in re.findall(rf"^vllm:{name}_total(?:{{[^}}]*}})? (\S+)$", metrics, re.M)))

    return total("prompt_tokens"), total("prompt_tokens_cached")


def started_at(metrics: str) -> str:
    """The ``process_start_time_seconds`` of a server's ``/metrics`` ("" where it has none).

    >>> started_at('# TYPE process_start_time_seconds gauge\\nprocess_start_time_seconds 1.7649e+09')
    '1.7649e+09'
    """
    found = re.search(r"^process_start_time_seconds(?:\{[^}]*\})? (\S+)$", metrics, re.M)
    return found.group(1) if found else ""


def probe(http: Transport, served_model: str, ids: Sequence[int]) -> Capabilities:
    """What the server's token route offers (see ``Capabilities``), from two requests for ``ids`` (the second must
    hit the cache the first filled, and its rows past the hit must equal the first's) and ``/metrics``."""
    flags = f"start vLLM with {FLAGS} to let it reuse shared prefixes"
    try:
        whole = http.request("POST", ROUTE, body(served_model, ids, 1, read_cache=False), tokens=len(ids),
                             at_root=True)
    except ServerError as err:
        reason = str(err).removeprefix(f"server {http.url}")
        return Capabilities(note=f"no token route ({one_line(reason, 160).lstrip(': ')}); {flags}")
    if cached_of(whole) is None:
        return Capabilities(route=True, note=f"its answers do not count cached prompt tokens; {flags}")
    for tries in range(PROBE_TRIES):  # a refusal (an uninitialised row JSON cannot write, see above) is tried again
        try:
            hit = http.request("POST", ROUTE, body(served_model, ids, 1, read_cache=True), tokens=len(ids),
                               at_root=True)
            break
        except ServerError as err:
            if err.status is None or err.status in (401, 403):
                raise
            if tries == PROBE_TRIES - 1:
                reason = one_line(str(err).removeprefix(f"server {http.url}"), 160).lstrip(": ")
                return Capabilities(route=True, cached_tokens=True, note=f"it refused a request that reads its "
                                                                         f"prefix cache {PROBE_TRIES} times ({reason})")
    cached = cached_of(hit) or 0
    if not cached:
        return Capabilities(route=True, cached_tokens=True, note=f"a repeated {len(ids)}-token prompt found nothing in "
                                                                 "its prefix cache; start vLLM with prefix caching on")
    try:
        got, _ = read_rows(hit, ids, cached + 1, 0)
        ref, _ = read_rows(whole, ids, cached + 1, 0)
        worst = float(max(abs(got.logprob - ref.logprob)))
    except Untrusted as err:
        return Capabilities(route=True, cached_tokens=True, note=f"its rows past a prefix-cache hit are not laid out "
                                                                 f"as this backend reads them ({err})")
    if not worst <= PROBE_TOL:
        return Capabilities(route=True, cached_tokens=True, note=f"its rows past a prefix-cache hit differ from the "
                                                                 f"same rows computed whole by {worst:.3g}")
    try:
        block = block_from_metrics(http.request("GET", "/metrics", at_root=True, text=True))
    except ServerError:
        block = 0
    return Capabilities(True, True, block or cached & -cached)  # else the largest power of two dividing the hit


class TokenRoute:
    """Scoring through the token route of one server (see the module docstring).

    Args:
        http: the server's transport.
        served_model: the model's name there.
        capabilities: what ``probe`` found (``reads_cache`` must be true).
        in_flight: requests in flight at once.
    """

    def __init__(self, http: Transport, served_model: str, capabilities: Capabilities, *,
                 in_flight: int = IN_FLIGHT) -> None:
        self.http, self.served_model, self.capabilities = http, served_model, capabilities
        self.block_size = capabilities.block_size
        self.in_flight = int(in_flight)
        self.read = 0  # requests sent to read the cache
        self.untrusted = 0  # answers read past the cache that did not check out
        self.refusals = 0  # requests to read the cache that the server refused
        self.shared = 0  # requests whose rows under their hit were taken from a request sharing them
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def trusted(self) -> bool:
        """Whether the cache is still read: fewer than ``UNTRUSTED_LIMIT`` answers read past it did not check out,
        and fewer than ``UNTRUSTED_LIMIT`` or half of the requests to read it were refused."""
        return self.untrusted < UNTRUSTED_LIMIT and (self.refusals < UNTRUSTED_LIMIT or 2 * self.refusals < self.read)

    def score(self, items: list[tuple[tuple[int, ...], int]], *, top_k: int, read_cache: bool, progress: bool,
              stats: Any, on_done: OnDone | None, desc: str, refused: Callable[[int, Exception], Exception],
              batch_tokens: int) -> list[TokenScores]:
        """``TokenScores`` of (token ids, first scored index) pairs, in the order given, reading the prefix cache
        where ``read_cache``; ``refused(i, err)`` is the error for request ``i`` whose answer, computed whole, does
        not check out."""
        order, after, whole, hits = cache_order([ids for ids, _ in items], [s for _, s in items],
                                                max(self.block_size, 1))
        if not (read_cache and self.trusted):
            after, whole = [None] * len(items), [True] * len(items)
        answered = Answered([items[i][0] for i in order], [items[i][1] for i in order])

        def run(batch: list[int]) -> list[tuple[TokenScores, str, int]]:
            out = []
            for k in batch:
                out.append(self._one(order[k], k, items[order[k]], top_k, hits[k], not whole[k] and self.trusted,
                                     refused, answered))
                answered.add(k, out[-1][0])
            return out

        def done(batch: list[int], results: list[tuple[TokenScores, str, int]]) -> None:
            if on_done is not None:
                on_done([order[k] for k in batch], [r[0] for r in results])

        got = self.http.fan_out([len(items[i][0]) for i in order], run, prompts=1, tokens=batch_tokens, after=after,
                                in_flight=self.in_flight, progress=progress, stats=stats, desc=desc, on_done=done)
        out: list[Any] = [None] * len(items)
        for k, (scores, path, computed) in got.items():
            out[order[k]] = scores
            stats.count_path(path, 1)
            stats.tokens_forwarded += computed
            stats.tokens_padded += computed
        stats.tokens_scored += sum(len(ids) - s for ids, s in items)
        return out

    def _one(self, i: int, k: int, item: tuple[tuple[int, ...], int], top_k: int, hit: int, read: bool,
             refused: Callable[[int, Exception], Exception], answered: Answered) -> tuple[TokenScores, str, int]:
        """Request ``i`` (``k`` in ``answered``): read past the cache where ``read`` (``hit``: the cached tokens it is
        expected to find; tried again where refused), the rows a hit covers taken from ``answered``; sent again with
        the cache off if that does not check out or stays refused. Returns its scores, its path and the prompt
        tokens the server computed for it."""
        ids, start = item
        computed = 0
        for tries in range(READ_TRIES if read else 0):
            with self._lock:
                self.read += 1
            try:
                answer = self._send(ids, top_k, read_cache=True)
                cached = cached_of(answer) or 0
                computed += len(ids) - cached
                shared = answered.rows(k, start, cached + 1) if cached >= start else None
                scores, cached = read_rows(answer, ids, start if shared is None else cached + 1, top_k)
                if shared is not None:
                    scores = joined(shared, scores)
                    with self._lock:
                        self.shared += 1
                self._saw_hit(cached)
                return scores, "server-cache" if cached else "server", computed
            except Untrusted as err:
                if not err.covered:
                    self._distrust(err)
                break
            except ServerError as err:
                # vLLM's CPU build refuses some of these (HTTP 400 "Out of range float values are not JSON
                # compliant": an uninitialised row of a cached position holds a NaN or an infinity); the server
                # computed the prompt past its hit all the same, and another try holds other uninitialised rows
                if err.status is None or err.status in (401, 403):
                    raise
                computed += len(ids) - hit
                with self._lock:
                    self.refusals += 1
                if not self.trusted:
                    break
        answer = self._send(ids, top_k, read_cache=False)
        try:
            scores, cached = read_rows(answer, ids, start, top_k)
        except Untrusted as err:
            raise refused(i, err.impossible or err) from None
        return scores, "server-resent" if read else "server", computed + len(ids) - cached

    def _send(self, ids: Sequence[int], top_k: int, *, read_cache: bool) -> Any:
        return self.http.request("POST", ROUTE, body(self.served_model, ids, top_k, read_cache=read_cache),
                                 tokens=len(ids), at_root=True)

    def _saw_hit(self, cached: int) -> None:
        if cached:
            with self._lock:
                self.block_size = math.gcd(self.block_size, cached)

    def _distrust(self, err: Exception) -> None:
        """Count an answer read past the cache that did not check out; warn on the first, stop reading the cache at
        ``UNTRUSTED_LIMIT``."""
        with self._lock:
            self.untrusted += 1
            count = self.untrusted
        where = f"server {self.http.url}"
        if count == 1:
            warnings.warn(f"{where}: an answer read past its prefix cache did not check out "
                          f"({one_line(str(err), 200)}); sent again with the cache off", stacklevel=2)
        elif count == UNTRUSTED_LIMIT:
            warnings.warn(f"{where}: {count} answers read past its prefix cache did not check out; its prompts are "
                          "computed whole from now on", stacklevel=2)
