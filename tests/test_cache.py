"""The score cache: round trip, and use from a worker thread (as the workbench does)."""

import threading

import numpy as np

from surfacelab.cache import ScoreCache, pack, unpack


def _row(n):
    return {"logprob": -np.arange(n, dtype=np.float32), "entropy": np.ones(n, np.float32),
            "rank": np.arange(1, n + 1), "greedy": np.arange(n) == 0}


def test_pack_roundtrip():
    row = _row(5)
    back = unpack(5, pack(row))
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
