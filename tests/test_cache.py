"""The score cache: round trip, and use from a worker thread (as the workbench does)."""

import threading

import numpy as np

from surfacelab.cache import ScoreCache, pack, unpack


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
