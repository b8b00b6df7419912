"""On-disk result cache: sqlite, keyed by the model fingerprint and the exact token ids (and, for a masked LM's
copy, its masked and scored positions).

Every stored blob carries a checksum over its key and bytes; a blob that fails it (a tampered or
torn write) is treated as missing and recomputed. Nothing here ever fails a run, and nothing here ever
deletes a file: a file that fails sqlite's integrity check is moved aside with its ``-wal`` / ``-shm``
(or, where it cannot be moved, left alone and skipped). A file another process holds locked is passing: a write
that finds it locked keeps its rows in memory and tries again with back-off (at the next write, or at exit), a read
that finds it locked is a miss. Any other failure (a full disk, a read-only file, an I/O error) keeps every file
and stops writing for this process, or, for a read, stops using the cache; a read-only one is read but not written;
each case warns once with what really happened.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import sqlite3
import struct
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from ..paths import cache_dir

_SCHEMA = "CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, data BLOB, digest BLOB)"
#: sqlite's result codes for a damaged file (SQLITE_CORRUPT, SQLITE_NOTADB); every other error leaves the file be
_CORRUPT_CODES = {11, 26}
#: sqlite's result codes for a file another connection holds (SQLITE_BUSY, SQLITE_LOCKED): a passing state
_LOCKED_CODES = {5, 6}
#: Seconds before the first retry of a write that found the file locked; each failed retry doubles it, up to the last
RETRY_S = (0.25, 30.0)
#: Rows a cache keeps in memory while its file is locked; past it the oldest are dropped (they are recomputed if asked
#: for again) and the warning says how many
MAX_PENDING = 20_000
#: Seconds a process's exit waits for a locked file, to write what it still holds
EXIT_WAIT_S = 5.0
_DTYPES = {"<f4", "<i4", "|u1"}


def request_key(fingerprint: str, input_ids: tuple[int, ...], start: int) -> str:
    """The cache key of one scored request."""
    h = hashlib.sha256(fingerprint.encode())
    h.update(np.asarray(input_ids, dtype=np.int64).tobytes())
    h.update(str(start).encode())
    return h.hexdigest()


def masked_key(fingerprint: str, input_ids: tuple[int, ...], masked: tuple[int, ...], scored: tuple[int, ...]) -> str:
    """The cache key of one masked copy (a masked LM's input, its masked and its scored positions): a
    ``request_key`` under a tag that no causal key has (theirs is the bare fingerprint)."""
    return request_key(f"{fingerprint}|masked|{','.join(map(str, masked))}|{','.join(map(str, scored))}",
                       input_ids, 0)


def derived_key(fingerprint: str, kind: str, payload: str) -> str:
    """The cache key of numbers an analysis derived from a model's forward passes (``engine.derived``): the
    fingerprint, the analysis (``kind``, with its code's version) and everything else they depend on (``payload``)."""
    h = hashlib.sha256(f"{fingerprint}|derived|{kind}".encode())
    h.update(b"\0" + payload.encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def _storable(a: np.ndarray) -> np.ndarray:
    """``a`` as a flat float32 (floats), uint8 (bools) or int32 (integers) array."""
    a = np.asarray(a)
    dtype = np.float32 if a.dtype.kind == "f" else np.uint8 if a.dtype.kind == "b" else np.int32
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


def pack(arrays: dict[str, np.ndarray]) -> bytes:
    """Serialise named arrays as float32 / int32 / uint8: a header of names, dtypes and sizes, then the data."""
    flat = {k: _storable(a) for k, a in arrays.items()}
    head = ";".join(f"{k}:{a.dtype.str}:{a.size}" for k, a in flat.items()).encode()
    return struct.pack("<H", len(head)) + head + b"".join(a.tobytes() for a in flat.values())


def unpack(data: bytes) -> dict[str, np.ndarray]:
    """Inverse of ``pack``; ValueError on a blob that does not parse."""
    (n,) = struct.unpack_from("<H", data, 0)
    at, out = 2 + n, {}
    for part in data[2:2 + n].decode().split(";"):
        name, dtype, size = part.split(":")
        if dtype not in _DTYPES:
            raise ValueError(f"unknown dtype {dtype}")
        arr = np.frombuffer(data, np.dtype(dtype), int(size), at).copy()
        at += arr.nbytes
        out[name] = arr
    if at != len(data):
        raise ValueError("trailing bytes")
    return out


def _digest(key: str, data: bytes) -> bytes:
    return hashlib.blake2b(key.encode() + b"\0" + data, digest_size=16).digest()


def _looks_corrupt(err: Exception) -> bool:
    """Whether sqlite said the file is damaged (to be confirmed by an integrity check before anything moves)."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _CORRUPT_CODES
    return not isinstance(err, sqlite3.OperationalError) and any(
        m in str(err) for m in ("malformed", "not a database"))


def _is_locked(err: Exception) -> bool:
    """Whether sqlite said another connection holds the file (busy or locked): a state that passes."""
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _LOCKED_CODES
    return "locked" in str(err) or "busy" in str(err)


def _reason(err: Exception) -> str:
    """A sqlite failure in a few words: what to fix, not the error class."""
    text = str(err)
    for needle, words in (("full", "disk full"), ("readonly", "read-only"), ("locked", "locked by another process"),
                          ("I/O", "disk I/O error")):
        if needle in text:
            return words
    return text


class ScoreCache:
    """A sqlite store of per-request results; every failure degrades to "no cache" or "read-only"."""

    def __init__(self, path: str | os.PathLike | None = None) -> None:
        self.path = Path(path) if path is not None else cache_dir() / "scores.sqlite"
        self._conn: sqlite3.Connection | None = None
        self._broken = False
        self.read_only = False
        self.not_written = ""  # why this process stopped writing (a full disk, ...); "" while it writes
        self.rejected = 0  # blobs that failed their checksum (treated as missing)
        self.pending: dict[str, bytes] = {}  # packed rows a locked file could not take yet, written at the next try
        self.dropped = 0  # pending rows given up past MAX_PENDING (recomputed if asked for again)
        self._retry_at = 0.0  # no write is tried before this time (time.monotonic) while the file is locked
        self._retry_s = RETRY_S[0]
        self._warned_locked = False
        self._lock = threading.RLock()  # one connection, shared by threads (e.g. a widget's worker)

    def _open(self) -> sqlite3.Connection:
        """A connection in write-ahead-log mode, so that readers and one writer in other processes
        (two evaluation runs, a notebook next to a benchmark) do not block each other. On a failure the
        connection is kept (``self._conn``) for ``_recover``: closing it would make sqlite delete the journal."""
        conn = self._conn = sqlite3.connect(self.path, timeout=2.0, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(_SCHEMA)
        conn.execute("SELECT key FROM blobs LIMIT 1").fetchall()
        return conn

    def _open_read_only(self) -> sqlite3.Connection | None:
        """A read-only connection to an existing, valid cache file (None if there is none)."""
        for query in ("mode=ro", "mode=ro&immutable=1"):  # immutable: a WAL file in a read-only folder
            try:
                conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?{query}", uri=True, timeout=2.0,
                                       check_same_thread=False)
                conn.execute("SELECT key FROM blobs LIMIT 1").fetchall()
                return conn
            except sqlite3.DatabaseError:
                continue
        return None

    def _connect(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._broken:
            return self._conn
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            return self._give_up(f"cannot create its folder ({err})")
        if self.path.exists() and not os.access(self.path, os.R_OK):
            return self._give_up("the file is not readable")
        if not os.access(self.path.parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            return self._read_only_or_give_up()
        try:
            self._conn = self._open()
        except sqlite3.DatabaseError as err:
            if _is_locked(err):  # another process holds it: no cache for this call, the next one opens it
                self._close()
                return None
            self._recover(err)
        except OSError as err:
            self._give_up(f"cannot open it ({err})")
        return self._conn

    def _give_up(self, why: str) -> None:
        warnings.warn(f"surfacelab cache {self.path}: {why}; running without a cache", stacklevel=5)
        self._close()
        self._broken = True
        return None

    def _read_only_or_give_up(self) -> sqlite3.Connection | None:
        if not self.path.exists():
            return self._give_up("no cache file, and its folder is read-only (nothing was created)")
        conn = self._open_read_only()
        if conn is None:
            return self._give_up("read-only and not a readable cache (left as it is)")
        warnings.warn(f"surfacelab cache {self.path} is read-only: reading it, not storing new results",
                      stacklevel=5)
        self._conn, self.read_only = conn, True
        return conn

    def _intact(self) -> bool:
        """sqlite's own integrity check (``quick_check``) on a connection of its own."""
        try:
            conn = sqlite3.connect(self.path, timeout=2.0)
            try:
                return conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
            finally:
                conn.close()
        except sqlite3.DatabaseError as err:
            return not _looks_corrupt(err)

    def _failed(self, err: Exception, *, writing: bool) -> None:
        """A sqlite error on a read or a write: only a file that fails its integrity check is moved aside; anything
        else keeps every file and stops writing (a failed write) or using the cache (a failed read), saying why."""
        if _looks_corrupt(err) and not self._intact():
            self._recover(err)
        elif _is_locked(err):
            return  # a read misses (recomputed), a write keeps its rows pending: see put_many
        elif writing:
            if not self.not_written:
                self.not_written = _reason(err)
                warnings.warn(f"surfacelab cache {self.path}: not written ({self.not_written}); results are still "
                              "correct, and what it holds is still read", stacklevel=5)
        else:
            self._give_up(f"cannot be read ({_reason(err)}); its files are left as they are")

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _recover(self, err: Exception) -> None:
        """Move a damaged file aside (its -wal and -shm with it: none is deleted) and start a fresh one, or, where
        it is not damaged (locked, a full disk, ...), run without it; say exactly what happened. The connection
        is closed only after the move: sqlite deletes a journal when its last connection to the file closes."""
        if not self.path.exists():
            self._give_up(f"cannot be created ({_reason(err)}); nothing was moved")
            return
        if not (_looks_corrupt(err) and not self._intact()):
            self._give_up(f"cannot be opened ({_reason(err)}); its files are left as they are")
            return
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        try:
            os.replace(self.path, aside)
        except OSError as move_err:
            self._give_up(f"is unreadable ({err}) and could not be moved aside ({move_err}); it was left as it is")
            return
        for suffix in ("-wal", "-shm"):  # the damaged file's journal goes with it, not replayed onto the fresh one
            journal = Path(f"{self.path}{suffix}")
            if journal.exists():
                os.replace(journal, f"{aside}{suffix}")
        self._close()
        try:
            self._conn = self._open()
        except (OSError, sqlite3.DatabaseError) as open_err:
            self._give_up(f"is unreadable ({err}); moved it to {aside}, but a fresh cache failed too ({open_err})")
            return
        warnings.warn(f"surfacelab cache {self.path} was unreadable ({err}); moved it to {aside} and started "
                      "a fresh one", stacklevel=5)

    def get_many(self, keys: list[str]) -> dict[str, dict[str, np.ndarray]]:
        """Look up many keys at once; missing, unreadable or tampered entries are simply absent."""
        with self._lock:
            return self._get_many(keys)

    def _get_many(self, keys: list[str]) -> dict[str, dict[str, np.ndarray]]:
        found = {k: unpack(self.pending[k]) for k in keys if k in self.pending}  # not written yet: a file was locked
        keys = [k for k in keys if k not in found]
        conn = self._connect()
        if conn is None or not keys:
            return found
        try:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for key, data, digest in conn.execute(
                        f"SELECT key, data, digest FROM blobs WHERE key IN ({marks})", chunk):
                    entry = self._check(key, data, digest)
                    if entry is not None:
                        found[key] = entry
        except sqlite3.DatabaseError as err:
            self._failed(err, writing=False)
        return found

    def _check(self, key: str, data: object, digest: object) -> dict[str, np.ndarray] | None:
        """The stored arrays if the blob passes its checksum and parses, else None (counted in ``rejected``)."""
        if isinstance(data, bytes) and isinstance(digest, bytes) and _digest(key, data) == digest:
            try:
                return unpack(data)
            except (ValueError, struct.error, UnicodeDecodeError):
                pass
        self.rejected += 1
        return None

    def put_many(self, rows: dict[str, dict[str, np.ndarray]]) -> None:
        """Store many results in one transaction; a read-only, full or broken cache only warns, and rows a locked
        file cannot take yet are kept and written at a later try (``pending``)."""
        with self._lock:
            if self._broken or self.read_only or self.not_written:
                return
            self.pending.update((k, pack(v)) for k, v in rows.items())
            if len(self.pending) > MAX_PENDING:
                for key in list(self.pending)[:len(self.pending) - MAX_PENDING]:
                    del self.pending[key]
                    self.dropped += 1
            if self.pending and time.monotonic() >= self._retry_at:
                self._write_pending()

    def _write_pending(self) -> bool:
        """Try to write every pending row in one transaction; True when none is left pending."""
        conn = self._connect()
        if conn is None:
            if self._broken or self.read_only:
                self.pending.clear()
                return True
            return self._locked()  # the file could not even be opened: another process holds it
        if self.read_only:
            self.pending.clear()
            return True
        try:
            with conn:
                conn.executemany("INSERT OR REPLACE INTO blobs VALUES (?, ?, ?)",
                                 [(k, data, _digest(k, data)) for k, data in self.pending.items()])
        except sqlite3.DatabaseError as err:
            if _is_locked(err):
                return self._locked()
            self.pending.clear()
            self._failed(err, writing=True)
            return True
        self.pending.clear()
        self._retry_at, self._retry_s = 0.0, RETRY_S[0]
        return True

    def _locked(self) -> bool:
        """A write found the file locked: keep the rows, try again after a back-off that doubles; warn once."""
        self._retry_at = time.monotonic() + self._retry_s
        self._retry_s = min(2 * self._retry_s, RETRY_S[1])
        if not self._warned_locked:
            self._warned_locked = True
            warnings.warn(f"surfacelab cache {self.path}: locked by another process; {len(self.pending)} results are "
                          "kept in memory and written once it is free (results are still correct)", stacklevel=5)
        return False

    def flush(self, wait_s: float = 0.0) -> bool:
        """Write the rows a locked file could not take yet, trying for up to ``wait_s`` seconds; True when none is
        left (rows still pending are dropped at exit: they are recomputed if asked for again)."""
        deadline = time.monotonic() + wait_s
        with self._lock:
            while self.pending:
                if self._write_pending():
                    return True
                if time.monotonic() + self._retry_s > deadline:
                    return False
                time.sleep(min(self._retry_s, max(deadline - time.monotonic(), 0.0)))
            return True

    def clear(self) -> None:
        """Delete every cached result."""
        with self._lock:
            conn = self._connect()
            if conn is not None and not self.read_only:
                with conn:
                    conn.execute("DELETE FROM blobs")


_default: dict[str, ScoreCache] = {}


def default_cache() -> ScoreCache | None:
    """The process-wide cache at the current cache dir, or None when ``SURFACELAB_NO_CACHE`` is set."""
    if os.environ.get("SURFACELAB_NO_CACHE"):
        return None
    path = str(cache_dir() / "scores.sqlite")
    if path not in _default:
        _default[path] = ScoreCache(path)
    return _default[path]


@atexit.register
def _flush_at_exit() -> None:
    """At exit, each process-wide cache writes what a locked file kept it from writing (waiting a little)."""
    for store in _default.values():
        store.flush(EXIT_WAIT_S)
