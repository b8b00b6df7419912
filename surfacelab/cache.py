"""On-disk result cache: sqlite, keyed by the model fingerprint and the exact token ids.

A corrupt cache file is moved aside and a locked one is skipped; neither ever fails a run.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from .models import cache_dir

_SCHEMA = "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, n INTEGER, data BLOB)"


def request_key(fingerprint: str, input_ids: tuple[int, ...], start: int) -> str:
    """The cache key of one scored request."""
    h = hashlib.sha256(fingerprint.encode())
    h.update(np.asarray(input_ids, dtype=np.int64).tobytes())
    h.update(str(start).encode())
    return h.hexdigest()


def pack(arrays: dict[str, np.ndarray]) -> bytes:
    """Serialise per-token float32 log-probs and entropies, int32 ranks and bool greedy flags."""
    return (arrays["logprob"].astype(np.float32).tobytes() + arrays["entropy"].astype(np.float32).tobytes()
            + arrays["rank"].astype(np.int32).tobytes() + arrays["greedy"].astype(np.uint8).tobytes())


def unpack(n: int, data: bytes) -> dict[str, np.ndarray]:
    """Inverse of ``pack``."""
    f = 4 * n
    return {
        "logprob": np.frombuffer(data, np.float32, n, 0).copy(),
        "entropy": np.frombuffer(data, np.float32, n, f).copy(),
        "rank": np.frombuffer(data, np.int32, n, 2 * f).astype(np.int64),
        "greedy": np.frombuffer(data, np.uint8, n, 3 * f).astype(bool),
    }


class ScoreCache:
    """A sqlite store of per-request token scores; every failure degrades to "no cache"."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else cache_dir() / "scores.sqlite"
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self._lock = threading.RLock()  # one connection, shared by threads (e.g. a widget's worker)

    def _open(self) -> sqlite3.Connection:
        """A connection in write-ahead-log mode, so that readers and one writer in other processes
        (two evaluation runs, a notebook next to a benchmark) do not block each other."""
        conn = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        return conn

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._broken:
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._open()
            conn.execute("SELECT key FROM scores LIMIT 1").fetchall()
            self._conn = conn
        except sqlite3.DatabaseError as err:
            self._recover(err)
        except OSError as err:
            warnings.warn(f"surfacelab cache disabled: cannot open {self.path} ({err})", stacklevel=3)
            self._broken = True
        return self._conn

    def _recover(self, err: Exception) -> None:
        """Move a corrupt file aside and start a fresh one; give up quietly if that fails too."""
        if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
            warnings.warn(f"surfacelab cache {self.path} is locked; running without it", stacklevel=4)
            self._broken = True
            return
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        warnings.warn(f"surfacelab cache {self.path} is unreadable ({err}); moved it to {aside}", stacklevel=4)
        try:
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            os.replace(self.path, aside)
            self._conn = self._open()
        except (OSError, sqlite3.DatabaseError):
            self._broken = True

    def get_many(self, keys: list[str]) -> dict[str, dict[str, np.ndarray]]:
        """Look up many keys at once; missing or unreadable entries are simply absent."""
        with self._lock:
            return self._get_many(keys)

    def _get_many(self, keys: list[str]) -> dict[str, dict[str, np.ndarray]]:
        conn = self._connect()
        found: dict[str, dict[str, np.ndarray]] = {}
        if conn is None or not keys:
            return found
        try:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for key, n, data in conn.execute(f"SELECT key, n, data FROM scores WHERE key IN ({marks})", chunk):
                    if isinstance(data, bytes) and len(data) == 13 * n:
                        found[key] = unpack(n, data)
        except sqlite3.DatabaseError as err:
            self._recover(err)
            return {}
        return found

    def put_many(self, rows: dict[str, dict[str, np.ndarray]]) -> None:
        """Store many results; a locked or broken cache only warns."""
        with self._lock:
            self._put_many(rows)

    def _put_many(self, rows: dict[str, dict[str, np.ndarray]]) -> None:
        conn = self._connect()
        if conn is None or not rows:
            return
        try:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO scores VALUES (?, ?, ?)",
                                 [(k, len(v["logprob"]), pack(v)) for k, v in rows.items()])
        except sqlite3.DatabaseError as err:
            self._recover(err)

    def clear(self) -> None:
        """Delete every cached result."""
        conn = self._connect()
        if conn is not None:
            with conn:
                conn.execute("DELETE FROM scores")


_default: dict[str, ScoreCache] = {}


def default_cache() -> ScoreCache | None:
    """The process-wide cache at the current cache dir, or None when ``SURFACELAB_NO_CACHE`` is set."""
    if os.environ.get("SURFACELAB_NO_CACHE"):
        return None
    path = str(cache_dir() / "scores.sqlite")
    if path not in _default:
        _default[path] = ScoreCache(path)
    return _default[path]
