"""One deadline for a whole HTTP call made with httpx: connecting, sending and every read of the answer.

httpx's timeouts bound each socket operation on its own (one connect, one write, one read), so a server that
sends its answer one byte per second is never timed out. ``bound(client)`` puts a network backend into the
client's connection pools (its own and those of any proxies) that cuts the timeout of every connect, TLS
handshake, write and read to the time left before the deadline of the call running in that thread
(``with deadline(end): client.request(...)``), and raises httpcore's timeout once it has passed; httpx reports
it as an ``httpx.TimeoutException``, as for its own timeouts. Outside ``deadline`` the client's timeouts apply
unchanged. ``end`` may be a function, read at every operation: a deadline that moves later (more work queued on
the server while the call waits) lets a read that was waiting go on waiting.

httpx builds its pools without a way to pass httpcore's ``network_backend``, so ``bound`` sets it on the pools
it built; if a later httpx keeps them elsewhere, ``bound`` fails loudly rather than drop the deadline. The
backend and its streams follow httpcore's ``NetworkBackend`` / ``NetworkStream`` interface by duck typing, so
importing this module does not import httpcore (``transport`` imports httpx only when it connects).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Callable, Iterable, Iterator

_local = threading.local()


@contextlib.contextmanager
def deadline(end: float | Callable[[], float]) -> Iterator[None]:
    """Within the block, every socket operation of this thread's HTTP calls ends by ``end`` (``time.monotonic()``;
    a function: its value at each operation)."""
    _local.end = end
    try:
        yield
    finally:
        _local.end = None


def _end() -> float | None:
    end = getattr(_local, "end", None)
    return end() if callable(end) else end


def _left(timeout: float | None, error: str) -> float | None:
    """``timeout`` cut to the time left before this thread's deadline; httpcore's ``error`` once it has passed."""
    end = _end()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        import httpcore

        raise getattr(httpcore, error)("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """An httpcore connection whose every operation waits at most until the deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        while True:
            end, left = _end(), _left(timeout, "ReadTimeout")
            try:
                return self._inner.read(max_bytes, left)
            except Exception as err:  # httpcore's ReadTimeout: wait on where the deadline moved while this read waited
                if type(err).__name__ != "ReadTimeout" or left == timeout or _end() == end:
                    raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(timeout, "WriteTimeout"))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, "ConnectTimeout")))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """An httpcore network backend that opens ``_Stream`` connections, the connect itself bounded by the deadline."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> _Stream:
        return _Stream(self._inner.connect_tcp(host, port, _left(timeout, "ConnectTimeout"), local_address,
                                               socket_options))

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> _Stream:
        return _Stream(self._inner.connect_unix_socket(path, _left(timeout, "ConnectTimeout"), socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def bound(client: Any) -> Any:
    """``client`` (an ``httpx.Client``, before its first request), its calls bounded by ``deadline``.

    Raises:
        RuntimeError: this httpx keeps its connection pools where ``bound`` does not find them.
    """
    for transport in (client._transport, *client._mounts.values()):
        if transport is None:  # a $NO_PROXY pattern: its requests go through client._transport
            continue
        pool = getattr(transport, "_pool", None)
        if not hasattr(pool, "_network_backend"):
            raise RuntimeError(f"{type(transport).__name__} of this httpx has no connection pool to bound the "
                               "request deadline in; surfacelab needs an httpx whose transports keep one in ._pool")
        pool._network_backend = _Backend(pool._network_backend)
    return client
