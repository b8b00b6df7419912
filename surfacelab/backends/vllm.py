"""A backend that scores through a running vLLM server (its OpenAI-compatible completions API).

``load_lm("smollm2-135m", server="http://host:8000/v1")`` keeps the tokenizer local (so
``text.encode``'s boundary handling, BOS policy and truncation stay those of the in-process
backend) and sends the resulting token ids to the server:

* **Scoring** (``score``): where the server has vLLM's token route with cached-token counts (served with
  ``--enable-scale-out --enable-prompt-tokens-details``), one prompt per call to it, reading the prefix cache: a
  request goes once the request it shares a context with has been answered, so the shared context is computed once,
  and only rows the server computed for this prompt are read (``vllm_tokens``). Elsewhere, token-id prompts to
  ``/v1/completions`` with ``max_tokens=1``, ``temperature=0`` and vLLM's ``prompt_logprobs=k``, every prompt
  computed whole (vLLM does not read its prefix cache for requests with prompt log-probs there), and one warning at
  connect names the flags. Either answers per prompt position *by token id*: the target's log-prob and rank, and the
  k most likely tokens. (The OpenAI-style ``echo``/``logprobs`` answer keys its alternatives by token *string*,
  ambiguous when two ids decode alike, and carries no rank; it is not used.) vLLM counts ties into its rank; the
  backend recomputes the rank with ``RANK_TOL`` from the returned top-k, so the greedy flag agrees with the
  in-process backend on near-ties.
* **Next-token distributions** (``next_token``): the asked token ids go in vLLM's
  ``logprob_token_ids`` field of a one-token generation (log-probs of the generated position, raw
  by default, keyed by id through ``return_tokens_as_token_ids``); the top-k come from
  ``logprobs=k`` of the same position. Those requests do use vLLM's prefix cache, so many option
  orders of one question cost little more than one. A server without ``logprob_token_ids`` gets
  each asked id appended to the prompt and scored like a continuation ("append" mode, one prompt
  per asked id).
* **Entropy** is not available (the server returns only the top-k): NaN, ``has_entropy=False``.

Requests go in batches of prompts per HTTP call, a few calls in flight at once (on the token route one prompt per
call, ``in_flight`` calls at once, each after the one it shares its context with); connection errors
and 429/500/502/503/504 answers are retried with exponential back-off; a refused request (4xx), a malformed
answer, a timeout or a server that stays unreachable raises ``ServerError`` naming the server and
what went wrong: the status code and the server's own error message (one line, escaped, cut short), never the
content of an answer that is not one (a URL that is not a vLLM server may answer with anything, secrets included).
``timeout`` bounds a whole call (connecting, sending, every read of the answer, the retries and their back-off:
one deadline, see ``http_deadline``), so a server that trickles its answer is cut off; it is the time allowed per
``transport.DEADLINE_TOKENS`` prompt tokens the call waits for (its own and those of the calls in flight with it).
Every answer is checked before its batch reaches the engine (``vllm_checks``: log-probs finite and <= 0,
ranks >= 1, top-k sorted); an impossible one raises ``ServerError`` naming the request, and nothing of its
batch is cached.

Loading checks that the server serves the model the local tokenizer belongs to: the vocabulary
size (the largest token id the server accepts) and the server's own tokenization of a fixed probe
text must match; otherwise loading fails and says what differs. ``identity()`` (the cache-key
fingerprint) combines the served model name, the tokenizer, the vocabulary size and the log-prob
of the probe text, so a server restarted with other weights never reuses cached numbers.

The HTTP calls, their retries and deadline are ``transport``'s; where an API key may go is ``credentials``'s (only
to the server it was given for, as the ``Authorization`` header). This module is vLLM's dialect: which fields a
request carries and how its answer is read.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .._checks import is_int, is_number
from .base import NextTokenScores, OnDone, TokenScores
from .credentials import api_key_from, normalize_url
from .transport import CONCURRENCY, ServerError, Transport
from .vllm_checks import REASON_CHARS, ImpossibleAnswer, one_line, read_logprob, read_prompt_logprobs, request_view
from .vllm_tokens import IN_FLIGHT, PROBE_TOKENS, Capabilities, TokenRoute, probe, started_at

#: Text whose server-side tokenization and log-prob identify the served model.
PROBE = "The quick brown fox jumps over the lazy dog. Naïve café, 東京 2+2=4\n(probe)"
#: Prompts per HTTP call and prompt tokens per call, unless ``batch_size`` says otherwise.
BATCH_PROMPTS = 32
BATCH_TOKENS = 8192
#: vLLM's default ``--max-logprobs`` (most alternatives or asked ids per position).
MAX_LOGPROBS = 20
#: What each server offered when a backend first connected in this process, by (URL, served model, the server's start
#: time): its token route's ``Capabilities`` and the next-token mode. A later load of the same server reuses them: it
#: sends no probe and does not warn again.
PROBED: dict[tuple[str, str, str], tuple[Capabilities, str]] = {}
PROBED_LOCK = threading.Lock()


def _token_key(key: str) -> int:
    """The token id of a ``return_tokens_as_token_ids`` key ("token_id:123")."""
    if not key.startswith("token_id:"):
        raise ValueError(key)
    return int(key[len("token_id:"):])


class VLLMBackend:
    """Scores through a vLLM (OpenAI-compatible completions) server; see the module docstring.

    Build one with ``connect`` (or ``load_lm(..., server=URL)``), which checks the server.
    """

    kind = "vllm"
    has_entropy = False

    def __init__(self, url: str, served_model: str, *, api_key: str | None = None, timeout: float = 120.0,
                 retries: int = 4, concurrency: int = CONCURRENCY, batch_prompts: int = BATCH_PROMPTS,
                 batch_tokens: int = BATCH_TOKENS, max_logprobs: int = MAX_LOGPROBS, read_cache: bool = True,
                 in_flight: int = IN_FLIGHT) -> None:
        self.url = normalize_url(url)
        self.served_model = served_model
        self.batch_prompts, self.batch_tokens, self.max_logprobs = (int(batch_prompts), int(batch_tokens),
                                                                    int(max_logprobs))
        self.read_cache, self.in_flight = bool(read_cache), int(in_flight)
        self.vocab_size = 0
        self.max_model_len: int | None = None
        self.next_token_mode = "generate"
        self.capabilities = Capabilities(note="not probed")
        self.route: TokenRoute | None = None  # the token route, where the server reads its prefix cache for us
        self._identity = ""
        self.http = Transport(self.url, api_key=api_key, timeout=timeout, retries=retries, concurrency=concurrency,
                              connections=self.in_flight)

    def __repr__(self) -> str:
        return f"VLLMBackend(url={self.url!r}, served_model={self.served_model!r})"

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()

    # ------------------------------------------------------------------------------------- HTTP

    def _complete(self, prompts: list[Any], **fields: Any) -> list[dict]:
        """POST /completions for ``prompts``; the choices in prompt order (checked for count and shape)."""
        body = {"model": self.served_model, "prompt": prompts, "max_tokens": 1, "temperature": 0.0, **fields}
        tokens = sum(len(p) for p in prompts if isinstance(p, list))
        answer = self.http.request("POST", "/completions", body, tokens=tokens)
        choices = answer.get("choices") if isinstance(answer, dict) else None
        if not isinstance(choices, list) or len(choices) != len(prompts):
            got = len(choices) if isinstance(choices, list) else type(choices).__name__
            raise ServerError(f"server {self.url}: malformed answer: {got} choices for {len(prompts)} prompts")
        try:
            return sorted(choices, key=lambda c: int(c["index"]))
        except (KeyError, TypeError, ValueError):
            raise ServerError(f"server {self.url}: malformed answer: choices without an index") from None

    # ------------------------------------------------------------------------------------- scoring

    def _check_k(self, k: int, what: str) -> None:
        if k > self.max_logprobs:
            raise ValueError(f"{what}: {k} exceeds the {self.max_logprobs} log-probs per position this server "
                             f"returns; start vLLM with --max-logprobs {k} (and pass max_logprobs={k})")

    def _refused(self, i: int, view: str, err: Exception) -> ServerError:
        """The error for the answer to request ``i`` (shown as ``view``); raised before its batch reaches the cache."""
        kind = "impossible" if isinstance(err, ImpossibleAnswer) else "malformed"
        return ServerError(f"server {self.url}: {kind} answer to request {i} ({view}): {err}; nothing of its batch "
                           "is cached")

    def _score_ids(self, items: list[tuple[tuple[int, ...], int]], view: Callable[[int], str], *, top_k: int,
                   batch_size: int | None, progress: bool, stats: Any, on_done: OnDone | None,
                   desc: str) -> list[TokenScores]:
        """``TokenScores`` of (token ids, first scored index) pairs; ``view(i)`` shows request ``i`` in an error."""
        self._check_k(top_k, "top_k")
        if self.route is not None:
            return self.route.score(items, top_k=top_k, read_cache=self.read_cache, progress=progress, stats=stats,
                                    on_done=on_done, desc=desc, refused=lambda i, err: self._refused(i, view(i), err),
                                    batch_tokens=self.batch_tokens)

        def run(batch: list[int]) -> list[TokenScores]:  # a bad answer raises before ``on_done`` sees the batch
            prompts = [list(items[i][0]) for i in batch]
            choices = self._complete(prompts, prompt_logprobs=max(top_k, 1))
            out = []
            for c, i in zip(choices, batch):
                try:
                    out.append(read_prompt_logprobs(c, items[i][0], items[i][1], top_k))
                except (ValueError, KeyError, TypeError, AttributeError) as err:
                    raise self._refused(i, view(i), err) from None
            return out

        got = self.http.fan_out([len(ids) for ids, _ in items], run, prompts=batch_size or self.batch_prompts,
                                tokens=self.batch_tokens, progress=progress, stats=stats, desc=desc, on_done=on_done)
        stats.tokens_forwarded += sum(len(ids) for ids, _ in items)
        stats.tokens_padded += sum(len(ids) for ids, _ in items)
        stats.tokens_scored += sum(len(ids) - s for ids, s in items)
        stats.count_path("server", len(items))
        return [got[i] for i in range(len(items))]

    def score(self, encodings: Sequence[Any], *, top_k: int, batch_size: int | None, progress: bool, stats: Any,
              on_done: OnDone | None = None) -> list[TokenScores]:
        """Per-token scores of every encoded request, in the order given (see the module docstring)."""
        items = [(tuple(e.input_ids), e.start) for e in encodings]
        return self._score_ids(items, lambda i: request_view(encodings[i].context, encodings[i].continuation),
                               top_k=top_k, batch_size=batch_size, progress=progress, stats=stats, on_done=on_done,
                               desc=f"scoring via {self.served_model}")

    def next_token(self, prompts: Sequence[tuple[int, ...]], *, token_ids: Sequence[int], top_k: int,
                   batch_size: int | None, progress: bool = False, stats: Any,
                   on_done: OnDone | None = None) -> list[NextTokenScores]:
        """The next-token distribution after every prompt, in the order given (see the module docstring)."""
        self._check_k(top_k, "top_k")
        sel = [int(t) for t in token_ids]
        if self.next_token_mode == "append":
            return self._next_token_appended(prompts, sel, top_k, batch_size, progress, stats, on_done)
        chunks = [sel[i:i + self.max_logprobs] for i in range(0, len(sel), self.max_logprobs)]

        def run(batch: list[int]) -> list[NextTokenScores]:
            ps = [list(prompts[i]) for i in batch]
            selected = np.zeros((len(batch), len(sel)), np.float32)
            at = 0
            for chunk in chunks:
                choices = self._complete(ps, logprobs=1, logprob_token_ids=chunk, return_tokens_as_token_ids=True)
                for r, c in enumerate(choices):
                    got = self._generated_logprobs(c, batch[r], ps[r])
                    missing = [t for t in chunk if t not in got]
                    if missing:
                        raise ServerError(f"server {self.url}: malformed answer: asked token ids {missing[:5]} "
                                          "missing from logprob_token_ids' answer")
                    selected[r, at:at + len(chunk)] = [got[t] for t in chunk]
                at += len(chunk)
            tops = [(np.zeros(0, np.int64), np.zeros(0, np.float32))] * len(batch)
            if top_k:
                choices = self._complete(ps, logprobs=top_k, return_tokens_as_token_ids=True)
                tops = []
                for r, c in enumerate(choices):
                    got = self._generated_logprobs(c, batch[r], ps[r])
                    ranked = sorted(got.items(), key=lambda kv: -kv[1])[:top_k]
                    if len(ranked) < top_k:
                        raise ServerError(f"server {self.url}: malformed answer: {len(ranked)} alternatives, "
                                          f"{top_k} asked")
                    tops.append((np.array([t for t, _ in ranked], np.int64),
                                 np.array([v for _, v in ranked], np.float32)))
            return [NextTokenScores(selected[r], math.nan, tids, tlps) for r, (tids, tlps) in enumerate(tops)]

        got = self.http.fan_out([len(p) for p in prompts], run, prompts=batch_size or self.batch_prompts,
                                tokens=self.batch_tokens, progress=progress, stats=stats,
                                desc=f"next token via {self.served_model}", on_done=on_done)
        stats.tokens_forwarded += sum(len(p) for p in prompts)
        stats.tokens_padded += sum(len(p) for p in prompts)
        stats.tokens_scored += len(prompts)
        stats.count_path("server", len(prompts))
        return [got[i] for i in range(len(prompts))]

    def _generated_logprobs(self, choice: dict, i: int, prompt: Sequence[int]) -> dict[int, float]:
        """Token id -> log-prob (checked) at the generated position of a one-token completion of request ``i``."""
        try:
            top = choice["logprobs"]["top_logprobs"][0]
            return {_token_key(k): read_logprob(v) for k, v in top.items()}
        except ImpossibleAnswer as err:
            raise self._refused(i, f"next-token prompt of {len(prompt)} tokens", err) from None
        except (KeyError, IndexError, TypeError, ValueError) as err:
            raise ServerError(f"server {self.url}: malformed answer: no per-id log-probs of the generated "
                              f"token ({type(err).__name__}: {err})") from None

    def _next_token_appended(self, prompts: Sequence[tuple[int, ...]], sel: list[int], top_k: int,
                             batch_size: int | None, progress: bool, stats: Any,
                             on_done: OnDone | None) -> list[NextTokenScores]:
        """"append" mode: each asked id (or, for the top-k alone, any id) appended to the prompt and scored."""
        asked = sel or [0]
        items = [(tuple(p) + (t,), len(p)) for p in prompts for t in asked]
        per = len(asked)
        scores = self._score_ids(items, lambda i: f"next-token prompt {i // per}, asked id {asked[i % per]}",
                                 top_k=top_k, batch_size=batch_size, progress=progress, stats=stats, on_done=None,
                                 desc=f"next token via {self.served_model}")
        out = []
        for i in range(len(prompts)):
            rows = scores[i * per:(i + 1) * per]
            selected = np.array([s.logprob[0] for s in rows], np.float32)[:len(sel)]
            out.append(NextTokenScores(selected, math.nan, rows[0].top_ids[0], rows[0].top_logprobs[0]))
        if on_done is not None:
            on_done(list(range(len(prompts))), out)
        return out

    # ------------------------------------------------------------------------------------- loading checks

    def identity(self) -> str:
        """Served model, tokenizer, vocabulary and the probe's log-prob (never the URL or the key)."""
        return self._identity

    def warm_up(self) -> None:
        """Nothing: connecting probed the server already."""

    def check(self, tokenizer: Any, vocab_size: int) -> None:
        """Find the served model and check that it is the one ``tokenizer`` belongs to; set ``identity``.

        Raises:
            ServerError: the server is unreachable, serves several models and none was named, or
                serves a model whose vocabulary or tokenization differs from the local tokenizer's.
        """
        listing = self.http.request("GET", "/models")
        try:
            cards = {str(c["id"]): c for c in listing["data"]}
        except (KeyError, TypeError):
            raise ServerError(f"server {self.url}: malformed answer to GET /models: a JSON "
                              f"{type(listing).__name__} that is not a list of models (no \"data\" with an \"id\" "
                              "per model); is it a vLLM server?") from None
        if not self.served_model:
            if len(cards) != 1:
                raise ServerError(f"server {self.url} serves {len(cards)} models "
                                  f"({one_line(', '.join(cards), REASON_CHARS) or 'none'}); "
                                  "name one with served_model=")
            self.served_model = next(iter(cards))
        elif self.served_model not in cards:
            raise ServerError(f"served_model: {self.served_model!r} is not served by {self.url}; it serves: "
                              f"{one_line(', '.join(cards), REASON_CHARS) or 'nothing'}")
        card_len = cards[self.served_model].get("max_model_len")
        self.max_model_len = int(card_len) if is_int(card_len) and card_len > 1 else None
        self._check_vocab(vocab_size)
        self.vocab_size = vocab_size
        local = list(tokenizer(PROBE, add_special_tokens=True)["input_ids"])
        choice = self._complete([PROBE], prompt_logprobs=1, return_token_ids=True)[0]
        remote = choice.get("prompt_token_ids")
        if not isinstance(remote, list):
            raise ServerError(f"server {self.url} does not return prompt_token_ids; surfacelab needs vLLM >= 0.10.2 "
                              "(return_token_ids and prompt_logprobs)")
        if remote != local:
            diff = next((i for i, (a, b) in enumerate(zip(local, remote)) if a != b), min(len(local), len(remote)))
            raise ServerError(f"server {self.url} serves {self.served_model!r}, whose tokenizer differs from the local "
                              f"one: the probe text {PROBE!r} becomes {len(remote)} tokens there and {len(local)} "
                              f"here, first difference at token {diff} ({remote[diff:diff + 3]} vs "
                              f"{local[diff:diff + 3]}); load the matching model or tokenizer")
        try:
            probe = read_prompt_logprobs(choice, local, 1, 0)
        except ImpossibleAnswer as err:
            raise ServerError(f"server {self.url}: impossible answer for the probe text: {err}") from None
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ServerError(f"server {self.url} does not return vLLM's prompt_logprobs by token id ({err}); "
                              "surfacelab's server backend needs vLLM") from None
        self._probe_route(local)
        vocab_hash = hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).hexdigest()
        total = float(probe.logprob.astype(np.float64).sum())
        self._identity = hashlib.sha256(
            f"vllm|{self.served_model}|{vocab_hash}|{vocab_size}|{total:.2f}".encode()).hexdigest()[:32]

    def _probe_route(self, ids: list[int]) -> None:
        """Find what the server offers, once per server and process (``PROBED``): whether scoring can read its
        prefix cache (``vllm_tokens.probe``, on the probe's tokens repeated to ``PROBE_TOKENS``) and the next-token
        mode; warn, naming the server flags, where it cannot read the cache (once: a later load reuses the probe)."""
        key = (self.url, self.served_model, self._started())
        with PROBED_LOCK:
            known = PROBED.get(key)
        if known is None:
            size = min(PROBE_TOKENS, (self.max_model_len or PROBE_TOKENS + 1) - 1)
            found = (probe(self.http, self.served_model, (ids * (size // len(ids) + 1))[:size]),
                     self._probe_next_token_mode(ids))
            caps = found[0]
            with PROBED_LOCK:
                # a server that has the route and counts cached tokens but refused the probe's cache reads (its CPU
                # build sometimes cannot write its uninitialised rows as JSON) is probed again at the next load
                refused = caps.route and caps.cached_tokens and not caps.reads_cache
                known = found if refused else PROBED.setdefault(key, found)
            if known is found and not caps.reads_cache:
                warnings.warn(f"server {self.url}: scoring computes every prompt whole through /v1/completions: "
                              f"{caps.note} (docs/server.md)", stacklevel=6)
        self.capabilities, self.next_token_mode = known
        if self.capabilities.reads_cache:
            self.route = TokenRoute(self.http, self.served_model, self.capabilities, in_flight=self.in_flight)

    def _started(self) -> str:
        """When the server's process started (its ``/metrics``' ``process_start_time_seconds``; "" where it does
        not say), so that a server restarted at the same URL, perhaps with other flags, is probed again."""
        try:
            return started_at(self.http.request("GET", "/metrics", at_root=True, text=True))
        except ServerError:
            return ""

    def _check_vocab(self, vocab_size: int) -> None:
        """The server must accept token id ``vocab_size - 1`` and refuse ``vocab_size``."""
        try:
            self._complete([[vocab_size - 1]])
        except ServerError as err:
            if "vocabulary" not in str(err):
                raise
            raise ServerError(f"server {self.url} serves {self.served_model!r}, whose vocabulary is smaller than the "
                              f"local tokenizer's ({vocab_size} ids): it refuses token id {vocab_size - 1}; "
                              "load the matching model or tokenizer") from None
        try:
            self._complete([[vocab_size]])
        except ServerError as err:
            if "vocabulary" in str(err):
                return
            raise
        raise ServerError(f"server {self.url} serves {self.served_model!r}, whose vocabulary is larger than the "
                          f"local tokenizer's ({vocab_size} ids): it accepts token id {vocab_size}; "
                          "load the matching model or tokenizer")

    def _probe_next_token_mode(self, ids: list[int]) -> str:
        """"generate" where the server honours ``logprob_token_ids`` by id, else "append"."""
        asked = ids[1]
        choice = self._complete([ids[:1]], logprobs=1, logprob_token_ids=[asked], return_tokens_as_token_ids=True)[0]
        try:
            return "generate" if asked in self._generated_logprobs(choice, 0, ids[:1]) else "append"
        except ServerError:
            return "append"


def connect(server: str, tokenizer: Any, vocab_size: int, *, served_model: str | None = None,
            api_key: str | None = None, timeout: float = 120.0, **options: Any) -> VLLMBackend:
    """A checked ``VLLMBackend`` for the model ``tokenizer`` belongs to (see ``VLLMBackend.check``).

    Args:
        server: the API root, e.g. ``http://127.0.0.1:8000/v1`` (a bare ``http://host:port`` gets ``/v1``).
        tokenizer: the local (fast) tokenizer of the served model.
        vocab_size: rows of the model's output distribution (the config's ``vocab_size``).
        served_model: the model name on the server; None when it serves exactly one.
        api_key: sent to ``server`` as ``Authorization: Bearer ...``; default ``$SURFACELAB_API_KEY`` when
            ``$SURFACELAB_SERVER`` names ``server`` (none otherwise).
        timeout: seconds one HTTP call may take in all (connecting, sending, every read, retries and back-off) per
            ``transport.DEADLINE_TOKENS`` prompt tokens it waits for.
        **options: ``retries``, ``concurrency``, ``batch_prompts``, ``batch_tokens``, ``max_logprobs``, ``read_cache``
            (False: the token route computes every prompt whole), ``in_flight`` (calls at once on the token route).
    """
    if served_model is not None and (not isinstance(served_model, str) or not served_model):
        raise ValueError(f"served_model: expected a model name served by the server, got {served_model!r}")
    if not is_number(timeout) or not timeout > 0:
        raise ValueError(f"timeout: expected a positive number of seconds, got {timeout!r}")
    url = normalize_url(server)
    backend = VLLMBackend(url, served_model or "", api_key=api_key_from(api_key, url), timeout=timeout,
                          **options)
    try:
        backend.check(tokenizer, vocab_size)
    except BaseException:
        backend.close()
        raise
    return backend
