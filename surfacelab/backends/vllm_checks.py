"""vLLM's answers read and checked: only numbers a model can give get past (and into the cache).

* A log-prob is a finite number at most 0. Rounding may put a near-certain token a hair above 0, so values
  in (0, ``LOGPROB_TOL``] are read as 0 (every log-prob kept is <= 0); vLLM writes -inf (a token the model
  rules out) as -9999, read back as -inf; anything else non-finite (NaN, ``Infinity``, ``-Infinity``) or above
  ``LOGPROB_TOL`` is refused.
* A rank is an integer >= 1.
* At one prompt position, the alternatives taken by rank have non-increasing log-probs, and the prompt's own
  token is not ranked above a token clearly (by more than ``LOGPROB_TOL``) more likely than it.

A refusal is an ``ImpossibleAnswer`` saying what was wrong and at which token (``read_prompt_logprobs``); the
backend adds which request and raises its ``ServerError`` before any of that batch reaches the engine's cache.

An answer that is an error is quoted by what identifies it (``error_message``): the server's own error message, on one
line, escaped and cut short, or else the answer's reason phrase, type and size, never its content (a URL that is not
a vLLM server may answer with anything, secrets included).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .._checks import is_int, is_number
from .base import RANK_TOL, TokenScores

#: How far above 0 a log-prob may be (JSON rounding) and how far two may be out of order before it is refused.
LOGPROB_TOL = 1e-4
#: vLLM sends -inf log-probs as this value (JSON has no infinity).
JSON_NEG_INF = -9999.0
#: Characters of a server's own error message that an error quotes.
REASON_CHARS = 300


class ImpossibleAnswer(ValueError):
    """A server's answer holds a value no model gives (a log-prob above 0, infinite, a rank below 1, ...)."""


def read_logprob(value: Any) -> float:
    """A log-prob from JSON, checked: vLLM's -9999 is -inf, (0, ``LOGPROB_TOL``] is 0.

    >>> read_logprob(-1.5), read_logprob(5e-5), read_logprob(-9999)
    (-1.5, 0.0, -inf)

    Raises:
        ImpossibleAnswer: not a number, not finite, or above ``LOGPROB_TOL``.
    """
    if not is_number(value):
        raise ImpossibleAnswer(f"log-prob {value!r} is not a number")
    v = float(value)
    if not math.isfinite(v):
        raise ImpossibleAnswer(f"log-prob {v} is not finite")
    if v > LOGPROB_TOL:
        raise ImpossibleAnswer(f"log-prob {v:+} > 0")
    return -math.inf if v <= JSON_NEG_INF else min(v, 0.0)


def read_rank(value: Any) -> int:
    """A rank from JSON, checked: an integer >= 1.

    Raises:
        ImpossibleAnswer: not an integer, or below 1.
    """
    if not is_int(value):
        raise ImpossibleAnswer(f"rank {value!r} is not an integer")
    if value < 1:
        raise ImpossibleAnswer(f"rank {value} < 1")
    return int(value)


def read_position(entry: dict, target: int, k: int) -> tuple[float, int, list[tuple[int, float, int]]]:
    """One position of vLLM's ``prompt_logprobs`` (``{"id": {"logprob", "rank"}}``, holding ``target``), checked:
    the target's log-prob and rank, and the entries ranked 1..``k`` as (rank, log-prob, id) by rank.

    Raises:
        ImpossibleAnswer: a log-prob or rank is impossible, the entries taken by rank are not sorted by log-prob,
            or the target's rank puts it above tokens clearly more likely than it.
    """
    scores = {int(tid): (read_rank(v["rank"]), read_logprob(v["logprob"])) for tid, v in entry.items()}
    t_rank, t = scores[target]
    tops = sorted(((r, lp, tid) for tid, (r, lp) in scores.items() if r <= k), key=lambda x: x[0])
    for (r1, lp1, id1), (r2, lp2, id2) in zip(tops, tops[1:]):
        if lp2 > lp1 + LOGPROB_TOL:
            raise ImpossibleAnswer(f"top-k not sorted: rank {r2} (id {id2}, log-prob {lp2:.4f}) above rank {r1} "
                                   f"(id {id1}, log-prob {lp1:.4f})")
    above = sum(1 for tid, (_, lp) in scores.items() if tid != target and lp > t + LOGPROB_TOL)
    if t_rank <= above:
        raise ImpossibleAnswer(f"rank {t_rank} for the prompt's token (id {target}, log-prob {t:.4f}), though "
                               f"{above} listed tokens are more likely")
    return t, t_rank, tops


def read_prompt_logprobs(choice: dict, ids: Sequence[int], start: int, top_k: int, *, offset: int = 0) -> TokenScores:
    """One request's ``TokenScores`` from vLLM's per-position ``prompt_logprobs`` (the answer to ``ids``, scored
    from ``start``), checked; the rank is recomputed with ``RANK_TOL`` from the returned top-k (see ``backends.vllm``).
    ``offset``: the answer leaves out the rows of the first ``offset`` positions (position p is at p - offset).

    Raises:
        ImpossibleAnswer: an impossible value, naming the token (counted from 0 within the continuation).
        ValueError: a malformed answer (positions or alternatives missing).
    """
    plp = choice.get("prompt_logprobs")
    if not isinstance(plp, list) or len(plp) != len(ids) - offset or start < offset:
        got = len(plp) if isinstance(plp, list) else repr(plp)[:40]
        raise ValueError(f"prompt_logprobs: {got} positions for a prompt of {len(ids)} tokens"
                         + (f" less {offset}" if offset else ""))
    n = len(ids) - start
    logprob = np.empty(n, np.float32)
    rank = np.empty(n, np.int64)
    top_ids = np.zeros((n, top_k), np.int64)
    top_lps = np.zeros((n, top_k), np.float32)
    for j, pos in enumerate(range(start, len(ids))):
        entry = plp[pos - offset]
        if not isinstance(entry, dict) or str(ids[pos]) not in entry:
            raise ValueError(f"prompt_logprobs[{pos}] lacks the prompt's token {ids[pos]}")
        try:
            t, r_server, tops = read_position(entry, ids[pos], max(top_k, 1))
        except ImpossibleAnswer as err:
            raise ImpossibleAnswer(f"{err} at token {j} of the continuation") from None
        near = sum(1 for _, lp, tid in tops if tid != ids[pos] and t <= lp <= t + RANK_TOL)
        logprob[j] = t
        rank[j] = max(1, r_server - near)  # ties within RANK_TOL do not outrank (vLLM counts them)
        if top_k:
            if len(tops) < top_k:
                raise ValueError(f"prompt_logprobs[{pos}] has {len(tops)} alternatives, {top_k} asked")
            top_ids[j] = [tid for _, _, tid in tops[:top_k]]
            top_lps[j] = [lp for _, lp, _ in tops[:top_k]]
    return TokenScores(logprob, rank, np.full(n, np.nan, np.float32), top_ids, top_lps)


def request_view(context: str, continuation: str, most: int = 30) -> str:
    """A short view of a scoring request: the end of its context + the start of its continuation.

    >>> request_view("A cat sat on the", " mat")
    "'A cat sat on the' + ' mat'"
    >>> request_view("x" * 40, "y" * 40, most=5)
    "'…xxxxx' + 'yyyyy…'"
    """
    head = context if len(context) <= most else "…" + context[-most:]
    tail = continuation if len(continuation) <= most else continuation[:most] + "…"
    return f"{head!r} + {tail!r}"


def described(resp: Any) -> str:
    """An answer as its reason phrase, type and size: what identifies it, without its content."""
    kind = (resp.headers.get("content-type") or "no content type").split(";")[0].strip()
    return (f"{one_line(resp.reason_phrase or 'no reason given', 60)} ({one_line(kind, 60)}, "
            f"{len(resp.content):,} bytes)")


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, every character that is not printable escaped, cut to ``limit`` characters."""
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in " ".join(text.split()))
    return text if len(text) <= limit else text[:limit - 1] + "…"


def error_message(resp: Any) -> str:
    """The server's own error message where it gives one as vLLM and OpenAI-style servers do (a string at
    ``error.message``, ``error``, ``detail`` or ``message`` of a JSON object), on one line, escaped and cut to
    ``REASON_CHARS``; otherwise ``described``: never the content of an answer that is something else."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        error = body.get("error")
        for msg in (error.get("message") if isinstance(error, dict) else error, body.get("detail"),
                    body.get("message")):
            if isinstance(msg, str) and msg.strip():
                return one_line(msg, REASON_CHARS)
    return described(resp)


def refusal_hint(message: str) -> str:
    """What to do about a refusal vLLM explains in ``message``."""
    if "max allowed" in message or "max_logprobs" in message:
        return " (start vLLM with a larger --max-logprobs)"
    if "maximum context length" in message or "max_tokens must be at least 1" in message:
        return " (a prompt does not fit the server's --max-model-len; load_lm(..., max_length=) can shorten it)"
    return ""
