"""The HTTP side of a server backend: one client per server (its API key as the ``Authorization`` header, a server on
this machine reached without a proxy), calls retried with back-off under one deadline each, and requests fanned out
in calls with a few in flight, a request waiting for the one it shares a prefix with where asked. Nothing here knows
a server's dialect (``vllm``).

A call's deadline scales with the prompt tokens it waits for: ``timeout`` covers ``DEADLINE_TOKENS`` prompt tokens of
the call, of the calls in flight when it is sent and of those sent while it waits (a server batches whatever it has
been sent, so a call may finish only with the rest), and every further token adds its share. A server that computes
at least ``DEADLINE_TOKENS / timeout`` prompt tokens a second never fails a run, however many calls are queued on it,
while one that stops answering (or trickles its answer) is still cut off.
"""

from __future__ import annotations

import heapq
import re
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable, Sequence

from .base import OnDone, raise_if_cancelled
from .credentials import API_KEY_ENV, SERVER_ENV, Secret, api_key_from, on_this_machine, server_root
from .http_deadline import bound, deadline
from .vllm_checks import described, error_message, refusal_hint

#: HTTP calls in flight at once.
CONCURRENCY = 4
#: Answers worth another try: overloaded, restarting or behind a proxy whose upstream is down.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
#: Prompt tokens a call waits for (its own and those of the calls in flight with it) that ``timeout`` covers; more
#: scale its deadline.
DEADLINE_TOKENS = 4096


class ServerError(ConnectionError):
    """The server is unreachable, refused a request, timed out or answered something malformed.

    A ``ConnectionError`` (an ``OSError``), so that code handling I/O failures (the CLI's one-line
    errors) handles it too. ``status``: the HTTP status of a refused request (None for anything else).
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def about_access(said: str) -> bool:
    """Whether a server's HTTP 403 (``said``: its message) is about the API key, as it is unless the server says
    that the route is disabled: vLLM answers 403 "Scale-out endpoints are disabled. Restart vllm serve with
    --enable-scale-out ..." for its token route on a server started without it.

    >>> about_access("Forbidden"), about_access("Scale-out endpoints are disabled. Restart vllm serve with ...")
    (True, False)
    """
    return re.search(r"(?i)\bdisabled\b|--enable-", said) is None


class Transport:
    """The HTTP client of one server (``url``, the API root): ``request`` (one call, retried) and ``fan_out``
    (requests in calls, a few in flight, each after the one it waits for).

    Args:
        url: the API root (normalised by ``credentials.normalize_url``); ``root`` is the server's root (None where
            ``url`` does not end in ``/v1``).
        api_key: sent as ``Authorization: Bearer ...`` to this server only (kept in a ``Secret``).
        timeout: seconds a call of up to ``DEADLINE_TOKENS`` prompt tokens may take in all (connecting, sending,
            every read, the retries and their back-off); a call with more tokens, its own and those in flight before
            it, gets proportionally longer.
        retries, concurrency: tries after the first; calls in flight at once (``fan_out`` may be given more).
        connections: most connections open at once (at least ``concurrency``).
    """

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 120.0, retries: int = 4,
                 concurrency: int = CONCURRENCY, connections: int = 0) -> None:
        self.url = url
        self.root = server_root(url)
        self.timeout, self.retries, self.concurrency = float(timeout), int(retries), int(concurrency)
        self.connections = max(self.concurrency, int(connections), 1)
        self._key = Secret(api_key)
        self._lock = threading.Lock()
        self._in_flight = 0  # prompt tokens of the calls now waiting for an answer
        self._sent = 0  # prompt tokens of every call sent so far
        self._client = bound(self._make_client())

    def __getstate__(self) -> dict:
        """Everything but the connection and the API key (an unpickled copy reads ``$SURFACELAB_API_KEY``, when
        ``$SURFACELAB_SERVER`` names its server)."""
        return {k: v for k, v in self.__dict__.items()
                if k not in ("_client", "_key", "_lock", "_in_flight", "_sent")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._key = Secret(api_key_from(None, self.url))
        self._lock, self._in_flight, self._sent = threading.Lock(), 0, 0
        self._client = bound(self._make_client())

    @property
    def has_key(self) -> bool:
        """Whether an API key is sent (never which)."""
        return bool(self._key.value)

    def _make_client(self) -> Any:
        import httpx

        headers = {"Authorization": f"Bearer {self._key.value}"} if self._key.value else {}
        # reads, writes and the wait for a connection are bounded by each call's deadline (``request``) alone
        return httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(None, connect=10.0),
                            limits=httpx.Limits(max_connections=self.connections),
                            trust_env=not on_this_machine(self.url))

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def request(self, method: str, path: str, body: dict | None = None, *, tokens: int = 0, at_root: bool = False,
                text: bool = False) -> Any:
        """One HTTP call, retried with back-off on connection errors and ``RETRY_STATUS``; the decoded JSON answer
        (its text with ``text``).

        ``path`` is under the API root (``url``), or under the server's root with ``at_root``. ``tokens``: the prompt
        tokens the call sends. Its deadline (``deadline_for`` the tokens it waits for, see the module docstring) is
        one for the whole call: connecting, sending and every read of every try, and the back-off between tries (a
        try that would start after it is not made), so retries never stretch it.
        """
        import httpx

        where = f"server {self.url}"
        if at_root and self.root is None:
            raise ServerError(f"{where}: the API root does not end in /v1, so {path} cannot be placed")
        target = f"{self.root}{path}" if at_root else path
        with self._lock:
            ahead, sent = self._in_flight, self._sent
            self._in_flight += tokens
            self._sent += tokens
        start = time.monotonic()

        def waited() -> int:  # the tokens this call waits for: its own, those ahead of it, those sent since
            return ahead + self._sent - sent

        def end() -> float:
            return start + self.deadline_for(waited())

        last = ""
        tries = 0
        try:
            while tries <= self.retries:
                if tries:
                    pause = min(8.0, 0.5 * 2 ** (tries - 1))
                    if time.monotonic() + pause >= end():
                        break
                    time.sleep(pause)
                tries += 1
                try:
                    with deadline(end):
                        resp = self._client.request(method, target, json=body)
                except httpx.TimeoutException as err:
                    raise ServerError(f"{where}: no answer to {method} {path} within {end() - start:g} s (the whole "
                                      f"request; {self.deadline_rule(tokens, waited() - tokens)}; "
                                      f"{type(err).__name__}); raise timeout= or check the server") from None
                except httpx.TransportError as err:  # refused, reset, dropped: the server may be restarting
                    last = f"{type(err).__name__}: {err}"
                    continue
                if resp.status_code in RETRY_STATUS:
                    last = f"HTTP {resp.status_code}: {error_message(resp)}"
                    continue
                if resp.status_code == 401 or (resp.status_code == 403 and about_access(error_message(resp))):
                    raise ServerError(f"{where} refused the API key (HTTP {resp.status_code}): pass api_key= or set "
                                      f"${API_KEY_ENV} with ${SERVER_ENV}={self.url}"
                                      + (" (a key was sent)" if self._key.value else " (none was sent)"),
                                      status=resp.status_code)
                if resp.status_code >= 400:
                    raise ServerError(f"{where} refused {method} {path} (HTTP {resp.status_code}): "
                                      f"{error_message(resp)}{refusal_hint(error_message(resp))}",
                                      status=resp.status_code)
                if text:
                    return resp.text
                try:
                    return resp.json()
                except ValueError:
                    raise ServerError(f"{where}: malformed answer to {method} {path} (not JSON): "
                                      f"{described(resp)}") from None
        finally:
            with self._lock:
                self._in_flight -= tokens
        raise ServerError(f"{where}: unreachable after {tries} tries ({last}); is it running?")

    def deadline_for(self, tokens: int) -> float:
        """Seconds a call may take when it waits for ``tokens`` prompt tokens (its own and the other calls')."""
        return self.timeout * max(1.0, tokens / DEADLINE_TOKENS)

    def deadline_rule(self, tokens: int, others: int) -> str:
        """How a call's deadline was set, for its timeout error."""
        return (f"timeout={self.timeout:g} s per {DEADLINE_TOKENS:,} prompt tokens, scaled with the {tokens:,} this "
                f"call sent and the {others:,} of the other calls in flight with it")

    def fan_out(self, lengths: Sequence[int], run: Callable[[list[int]], list[Any]], *, prompts: int, tokens: int,
                after: Sequence[int | None] | None = None, in_flight: int | None = None, progress: bool,
                stats: Any, desc: str, on_done: OnDone | None) -> dict[int, Any]:
        """Requests ``0 .. len(lengths) - 1`` (``lengths``: their prompt tokens) run as calls ``run(batch)`` of at
        most ``prompts`` requests and ``tokens`` prompt tokens each (a longer request goes alone), ``in_flight``
        calls at once (default ``concurrency``); the results by index.

        ``after[i]``, where given, is a request (before ``i``) that must be answered before ``i`` is sent (None: at
        once). Ready requests go in index order, so the calls follow the order given as far as the waits allow.
        ``on_done`` is called from this thread as each call finishes; the first error cancels the rest.
        """
        from tqdm.auto import tqdm

        n = len(lengths)
        waiting: dict[int, list[int]] = {}
        ready: list[int] = []
        for i in range(n):
            first = after[i] if after is not None else None
            if first is None:
                ready.append(i)
            elif not 0 <= first < i:
                raise ValueError(f"after: request {i} waits for {first}, which is not an earlier request")
            else:
                waiting.setdefault(first, []).append(i)
        slots = max(1, in_flight or self.concurrency)
        out: dict[int, Any] = {}
        bar = tqdm(total=n, desc=desc, unit="req", disable=not progress or n < 64)
        pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="surfacelab-server")
        pending: dict[Future, list[int]] = {}
        try:
            while True:
                while len(pending) < slots and ready:
                    batch, total = [], 0
                    while ready and len(batch) < prompts and (not batch or total + lengths[ready[0]] <= tokens):
                        total += lengths[ready[0]]
                        batch.append(heapq.heappop(ready))
                    raise_if_cancelled()  # before each HTTP call (see ``base.cancelled_when``)
                    pending[pool.submit(run, batch)] = batch
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    batch = pending.pop(fut)
                    results = fut.result()
                    out.update(zip(batch, results))
                    for i in batch:
                        for j in waiting.pop(i, ()):
                            heapq.heappush(ready, j)
                    stats.batches += 1
                    if on_done is not None:
                        on_done(batch, results)
                    bar.update(len(batch))
        finally:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=False, cancel_futures=True)
            bar.close()
        return out
