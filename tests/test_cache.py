"""The score cache: round trip, and use from a worker thread (as the workbench does)."""

import contextlib
import threading

import numpy as np
import pytest

from surfacelab.engine.cache import ScoreCache, pack, unpack


def _row(n):
    return {"logprob": -np.arange(n, dtype=np.float32), "entropy": np.ones(n, np.float32),
            "rank": np.arange(1, n + 1)}


def test_pack_roundtrip():
    row = {**_row(5), "flag": np.arange(5) == 0}
    back = unpack(pack(row))
    assert list(back) == list(row)
    for k in row:
        np.testing.assert_array_equal(back[k], row[k])


def test_shared_cache_works_from_another_thread(tmp_path):
    store = ScoreCache(tmp_path / "c.sqlite")
    store.put_many({"a": _row(3)})
    seen = {}

    def worker():
        store.put_many({"b": _row(2)})
        seen.update(store.get_many(["a", "b"]))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert set(seen) == {"a", "b"}
    assert not list(tmp_path.glob("*.corrupt-*"))  # a thread switch is not corruption


def test_a_reader_in_another_process_does_not_block_a_writer(tmp_path):
    """Two runs sharing one cache file: an open read transaction elsewhere must not lock writers out."""
    import sqlite3
    import warnings

    path = tmp_path / "c.sqlite"
    ScoreCache(path).put_many({"a": _row(3)})
    other = sqlite3.connect(path)  # stands in for another process mid-read
    other.execute("BEGIN")
    assert other.execute("SELECT count(*) FROM blobs").fetchone() == (1,)
    writer = ScoreCache(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a "locked; running without it" warning fails the test
        writer.put_many({"b": _row(2)})
    other.rollback()
    assert set(ScoreCache(path).get_many(["a", "b"])) == {"a", "b"}


_READ_AS_UNPRIVILEGED = """
import sys, warnings
import numpy as np
from surfacelab.engine.cache import ScoreCache
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    store = ScoreCache(sys.argv[1])
    found = store.get_many(["a", "b"])
    store.put_many({"c": {"logprob": np.zeros(2, np.float32)}})
    found_c = store.get_many(["c"])
print(sorted(found), sorted(found_c))
for w in caught:
    print("WARNING", w.message)
"""


def _read_only_run(folder, path):
    """Run the cache in a process for which ``folder`` is read-only: a read-only bind mount in a private mount
    namespace when running as root (root ignores permission bits), else permission bits."""
    import os
    import shutil
    import subprocess
    import sys

    cmd = [sys.executable, "-c", _READ_AS_UNPRIVILEGED, str(path)]
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare: cannot make a read-only folder")
        script = f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && exec "$@"'
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *cmd]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if out.returncode and "mount" in out.stderr:
            pytest.skip(f"cannot make a read-only folder here: {out.stderr.strip()[:200]}")
    else:
        os.chmod(folder, 0o555)
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        finally:
            os.chmod(folder, 0o755)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.process
def test_a_valid_read_only_cache_is_read_and_not_written(tmp_path):
    path = tmp_path / "scores.sqlite"
    store = ScoreCache(path)
    store.put_many({"a": _row(3), "b": _row(2)})
    store._conn.close()
    out = _read_only_run(tmp_path, path)
    assert out.splitlines()[0] == "['a', 'b'] []"  # read: both entries; written: nothing
    assert "is read-only: reading it, not storing new results" in out
    assert "moved" not in out and not list(tmp_path.glob("*.corrupt-*"))


@pytest.mark.process
def test_a_missing_cache_in_a_read_only_folder_says_so(tmp_path):
    out = _read_only_run(tmp_path, tmp_path / "scores.sqlite")
    assert out.splitlines()[0] == "[] []"
    assert "no cache file, and its folder is read-only (nothing was created)" in out
    assert "moved" not in out and not list(tmp_path.iterdir())


@pytest.mark.process
def test_a_corrupt_file_that_cannot_be_moved_is_left_alone_and_said_so(tmp_path):
    path = tmp_path / "scores.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    out = _read_only_run(tmp_path, path)
    assert out.splitlines()[0] == "[] []"
    assert "moved it" not in out and "left as it is" in out
    assert path.read_bytes().startswith(b"this is not")


def test_a_tampered_blob_is_detected_and_recomputed(tiny_lm, tmp_path):
    import sqlite3

    from surfacelab import engine

    path = tmp_path / "c.sqlite"
    pairs = [("The cat", " sat on the mat"), ("A dog", " barked")]
    first = engine.logprobs(tiny_lm, pairs, cache=ScoreCache(path), progress=False)
    with sqlite3.connect(path) as conn:
        key, data = conn.execute("SELECT key, data FROM blobs ORDER BY key LIMIT 1").fetchone()
        bad = bytearray(data)
        bad[-5] ^= 0x40  # same length, one bit of one float flipped
        conn.execute("UPDATE blobs SET data = ? WHERE key = ?", (bytes(bad), key))
    store = ScoreCache(path)
    again = engine.logprobs(tiny_lm, pairs, cache=store, progress=False)
    assert store.rejected == 1 and again.stats.cached == 1  # the tampered one was recomputed
    for a, b in zip(first, again):
        np.testing.assert_allclose(a.logprob, b.logprob, atol=1e-5)


_FILL_A_SMALL_DISK = """
import os, sys, warnings
import numpy as np
from surfacelab.engine.cache import ScoreCache
warnings.simplefilter("always")
path = os.path.join(sys.argv[1], "scores.sqlite")
big = {"logprob": np.random.default_rng(0).random(4096).astype(np.float32)}  # 16 KiB a row, hard to compress
store = ScoreCache(path)
store.put_many({"first": big})  # committed (it may live only in the WAL so far)
with warnings.catch_warnings(record=True) as caught:
    for i in range(200):  # the disk holds about 20 of them
        store.put_many({f"row{i}": big})
    store.put_many({"after": big})
print("WRITES", len(store.get_many([f"row{i}" for i in range(200)])), store.not_written)
print("FILES", sorted(os.listdir(sys.argv[1])))
for w in caught:
    print("WARNING", w.message)
fresh = ScoreCache(path)  # the next run: what the first one committed is still there
print("NEXT", sorted(fresh.get_many(["first", "row0", "after"])))
"""


@pytest.mark.process
def test_a_full_disk_keeps_the_cache_and_stops_writing(tmp_path):
    """On a real full filesystem (a 400 KiB tmpfs in a private mount namespace): the run completes, says once that
    the cache was not written, and every file stays, committed rows readable in the next run."""
    import os
    import shutil
    import subprocess
    import sys

    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("making a small full filesystem needs root and unshare (a tmpfs in a private mount namespace)")
    disk = tmp_path / "disk"
    disk.mkdir()
    script = f'mount -t tmpfs -o size=400k tmpfs "{disk}" && exec "$@"'
    out = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", sys.executable,
                          "-c", _FILL_A_SMALL_DISK, str(disk)], capture_output=True, text=True, timeout=120)
    if out.returncode and "mount" in out.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {out.stderr.strip()[:200]}")
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    writes = next(line for line in lines if line.startswith("WRITES")).split()
    assert 0 < int(writes[1]) < 200 and writes[2:] == ["disk", "full"]
    files = next(line for line in lines if line.startswith("FILES"))
    assert "scores.sqlite" in files and "corrupt" not in files
    warned = [line for line in lines if line.startswith("WARNING")]
    assert warned == [f"WARNING surfacelab cache {disk}/scores.sqlite: not written (disk full); results are still "
                      "correct, and what it holds is still read"]
    assert lines[-1] == "NEXT ['first', 'row0']"


def test_a_damaged_file_is_moved_aside_with_its_journal_and_nothing_is_deleted(tmp_path):
    import warnings

    path = tmp_path / "scores.sqlite"
    path.write_bytes(b"this is not a sqlite database" * 100)
    for suffix in ("-wal", "-shm"):  # a journal beside it: evidence, and maybe rows someone wants back
        (tmp_path / f"scores.sqlite{suffix}").write_bytes(b"journal" + suffix.encode())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        store = ScoreCache(path)
        store.put_many({"a": _row(3)})
    assert any("moved it to" in str(w.message) for w in caught)
    aside = sorted(p.name for p in tmp_path.iterdir() if ".corrupt-" in p.name)
    stamp = aside[0].split(".corrupt-")[1][:10]
    assert aside == [f"scores.sqlite.corrupt-{stamp}", f"scores.sqlite.corrupt-{stamp}-shm",
                     f"scores.sqlite.corrupt-{stamp}-wal"]
    assert (tmp_path / f"scores.sqlite.corrupt-{stamp}-wal").read_bytes() == b"journal-wal"
    assert set(ScoreCache(path).get_many(["a"])) == {"a"}  # the fresh file works



_HOLD_THE_WRITE_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")  # the write lock, as another process's long transaction holds it
print("HELD", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
"""


@contextlib.contextmanager
def _write_lock_held(path, seconds):
    """A second process holding ``path``'s write lock for ``seconds`` (from when this yields), then committing."""
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", _HOLD_THE_WRITE_LOCK, str(path), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        yield
    finally:
        holder.wait(timeout=30)
    assert holder.returncode == 0


def test_a_write_lock_held_by_another_process_delays_the_writes_and_loses_none(tmp_path):
    """A third process holding the write lock for 2.5 s: the writes that meet it are kept and retried with back-off,
    one warning says so, and once the lock is free every row is in the file; the cache is still written afterwards."""
    import time
    import warnings

    path = tmp_path / "c.sqlite"
    store = ScoreCache(path)
    store.put_many({"before": _row(2)})
    with _write_lock_held(path, 2.5):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            store.put_many({"during": _row(3)})  # waits sqlite's busy timeout, then keeps the row
            assert set(store.pending) == {"during"}
            assert set(store.get_many(["during"])) == {"during"}  # this process still reads what it holds
            store.put_many({"during2": _row(4)})  # within the back-off: kept, no second wait
        assert [str(w.message) for w in caught] == [
            f"surfacelab cache {path}: locked by another process; 1 results are kept in memory and written once it "
            "is free (results are still correct)"]
    time.sleep(0.3)  # past the first back-off
    store.put_many({"after": _row(1)})
    assert store.pending == {} and store.not_written == ""
    assert set(ScoreCache(path).get_many(["before", "during", "during2", "after"])) == {
        "before", "during", "during2", "after"}


def test_rows_kept_for_a_locked_file_are_written_by_flush(tmp_path):
    """``flush`` (what a process's exit runs) waits for the lock to go and writes what is kept."""
    import warnings

    path = tmp_path / "c.sqlite"
    store = ScoreCache(path)
    store.put_many({"a": _row(1)})
    with _write_lock_held(path, 2.5):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            store.put_many({"b": _row(2)})
        assert set(store.pending) == {"b"}
        assert store.flush(10.0)
    assert set(ScoreCache(path).get_many(["a", "b"])) == {"a", "b"}
