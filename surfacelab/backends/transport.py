"""The HTTP side of a server backend: one client per server (its API key as the ``Authorization`` header, a server on
this machine reached without a proxy), calls retried with back-off under one deadline each, and batches of requests
fanned out with a few in flight. Nothing here knows a server's dialect (``vllm``)."""

from __future__ import annotations

import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any, Callable

from .base import OnDone, raise_if_cancelled
from .credentials import API_KEY_ENV, SERVER_ENV, Secret, api_key_from, on_this_machine
from .http_deadline import bound, deadline
from .vllm_checks import described, error_message, refusal_hint

#: HTTP calls in flight at once.
CONCURRENCY = 4
#: Answers worth another try: overloaded, restarting or behind a proxy whose upstream is down.
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


class ServerError(ConnectionError):
    """The server is unreachable, refused a request, timed out or answered something malformed.

    A ``ConnectionError`` (an ``OSError``), so that code handling I/O failures (the CLI's one-line
    errors) handles it too.
    """


class Transport:
    """The HTTP client of one server (``url``, the API root): ``request`` (one call, retried), ``fan_out`` (batches,
    a few in flight) and ``batches`` (requests split into calls by count and tokens).

    Args:
        url: the API root (normalised by ``credentials.normalize_url``).
        api_key: sent as ``Authorization: Bearer ...`` to this server only (kept in a ``Secret``).
        timeout: seconds one call may take in all (connecting, sending, every read, the retries and their back-off).
        retries, concurrency: tries after the first; calls in flight at once.
    """

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 120.0, retries: int = 4,
                 concurrency: int = CONCURRENCY) -> None:
        self.url = url
        self.timeout, self.retries, self.concurrency = float(timeout), int(retries), int(concurrency)
        self._key = Secret(api_key)
        self._client = bound(self._make_client())

    def __getstate__(self) -> dict:
        """Everything but the connection and the API key (an unpickled copy reads ``$SURFACELAB_API_KEY``, when
        ``$SURFACELAB_SERVER`` names its server)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_client", "_key")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._key = Secret(api_key_from(None, self.url))
        self._client = bound(self._make_client())

    @property
    def has_key(self) -> bool:
        """Whether an API key is sent (never which)."""
        return bool(self._key.value)

    def _make_client(self) -> Any:
        import httpx

        headers = {"Authorization": f"Bearer {self._key.value}"} if self._key.value else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(self.timeout, connect=10.0),
                            limits=httpx.Limits(max_connections=max(1, self.concurrency)),
                            trust_env=not on_this_machine(self.url))

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()

    def request(self, method: str, path: str, body: dict | None = None) -> Any:
        """One HTTP call, retried with back-off on connection errors and ``RETRY_STATUS``; the decoded JSON answer.

        ``timeout`` is one deadline for the whole call: connecting, sending and every read of every try, and the
        back-off between tries (a try that would start after it is not made), so retries never stretch it.
        """
        import httpx

        where = f"server {self.url}"
        last = ""
        end = time.monotonic() + self.timeout
        tries = 0
        while tries <= self.retries:
            if tries:
                pause = min(8.0, 0.5 * 2 ** (tries - 1))
                if time.monotonic() + pause >= end:
                    break
                time.sleep(pause)
            tries += 1
            try:
                with deadline(end):
                    resp = self._client.request(method, path, json=body)
            except httpx.TimeoutException as err:
                raise ServerError(f"{where}: no answer to {method} {path} within {self.timeout:g} s (the whole "
                                  f"request; {type(err).__name__}); raise timeout= or check the server") from None
            except httpx.TransportError as err:  # refused, reset, dropped: the server may be restarting
                last = f"{type(err).__name__}: {err}"
                continue
            if resp.status_code in RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {error_message(resp)}"
                continue
            if resp.status_code in (401, 403):
                raise ServerError(f"{where} refused the API key (HTTP {resp.status_code}): pass api_key= or set "
                                  f"${API_KEY_ENV} with ${SERVER_ENV}={self.url}"
                                  + (" (a key was sent)" if self._key.value else " (none was sent)"))
            if resp.status_code >= 400:
                raise ServerError(f"{where} refused {method} {path} (HTTP {resp.status_code}): {error_message(resp)}"
                                  + refusal_hint(error_message(resp)))
            try:
                return resp.json()
            except ValueError:
                raise ServerError(f"{where}: malformed answer to {method} {path} (not JSON): "
                                  f"{described(resp)}") from None
        raise ServerError(f"{where}: unreachable after {tries} tries ({last}); is it running?")

    def batches(self, lengths: list[int], prompts: int, tokens: int) -> list[list[int]]:
        """Indices split into calls: at most ``prompts`` requests and ``tokens`` prompt tokens each (a longer
        request goes alone)."""
        out: list[list[int]] = []
        cur: list[int] = []
        total = 0
        for i, n in enumerate(lengths):
            if cur and (len(cur) >= prompts or total + n > tokens):
                out.append(cur)
                cur, total = [], 0
            cur.append(i)
            total += n
        return out + ([cur] if cur else [])

    def fan_out(self, batches: list[list[int]], run: Callable[[list[int]], list[Any]], *, progress: bool,
                 stats: Any, desc: str, on_done: OnDone | None, total: int) -> dict[int, Any]:
        """Run ``run(batch)`` for every batch with at most ``concurrency`` in flight; results by index.

        ``on_done`` is called from this thread as each batch finishes; the first error cancels the rest.
        """
        from tqdm.auto import tqdm

        out: dict[int, Any] = {}
        bar = tqdm(total=total, desc=desc, unit="req", disable=not progress or total < 64)
        pool = ThreadPoolExecutor(max_workers=max(1, self.concurrency), thread_name_prefix="surfacelab-vllm")
        pending: dict[Future, list[int]] = {}
        todo = iter(batches)
        try:
            while True:
                while len(pending) < max(1, self.concurrency):
                    batch = next(todo, None)
                    if batch is None:
                        break
                    raise_if_cancelled()  # before each HTTP call (see ``base.cancelled_when``)
                    pending[pool.submit(run, batch)] = batch
                if not pending:
                    break
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    batch = pending.pop(fut)
                    results = fut.result()
                    out.update(zip(batch, results))
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

    def _batches(self, lengths: list[int], batch_size: int | None) -> list[list[int]]:
        """Indices split into HTTP calls: at most ``batch_size`` (or ``batch_prompts``) prompts and
        ``batch_tokens`` prompt tokens each (a longer prompt goes alone)."""
        cap = batch_size or self.batch_prompts
        out: list[list[int]] = []
        cur: list[int] = []
        tokens = 0
        for i, n in enumerate(lengths):
            if cur and (len(cur) >= cap or tokens + n > self.batch_tokens):
                out.append(cur)
                cur, tokens = [], 0
            cur.append(i)
            tokens += n
        return out + ([cur] if cur else [])
