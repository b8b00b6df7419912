"""A second real vLLM server: other weights under the same name get their own cache entries, and a
server killed mid-run ends the call with a clear error while the finished batches stay cached."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import surfacelab as sl
from surfacelab import engine, text
from surfacelab.backends.transport import ServerError
from surfacelab.engine.cache import ScoreCache, request_key

from vllm_env import SERVED, model_dir, vllm_python
from test_engine import PAIRS

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_a_server_restarted_with_other_weights_does_not_get_stale_numbers(other_weights_server, remote_lm, tmp_path):
    other = sl.load_lm(SERVED, server=other_weights_server.url)
    assert other.backend.served_model == remote_lm.backend.served_model == SERVED
    assert other.fingerprint != remote_lm.fingerprint
    store = ScoreCache(tmp_path / "scores.sqlite")
    reqs = PAIRS[:12]
    first = engine.logprobs(remote_lm, reqs, cache=store, progress=False)
    second = engine.logprobs(other, reqs, cache=store, progress=False)
    assert second.stats.cached == 0
    assert max(abs(a.total - b.total) for a, b in zip(first, second)) > 0.01


def test_a_server_that_stops_answering_is_a_timeout_not_a_hang(other_weights_server):
    lm = sl.load_lm(SERVED, server=other_weights_server.url, timeout=5)
    os.killpg(other_weights_server.proc.pid, signal.SIGSTOP)
    try:
        start = time.monotonic()
        with pytest.raises(ServerError, match=r"no answer to POST /completions within 5 s .*raise timeout="):
            engine.logprobs(lm, PAIRS[:40], cache=False, progress=False)
        assert time.monotonic() - start < 15
    finally:
        os.killpg(other_weights_server.proc.pid, signal.SIGCONT)
    assert engine.logprobs(lm, PAIRS[:2], cache=False, progress=False)[0].n_tokens >= 1  # it answers again


def test_a_server_killed_mid_run_is_a_clear_error_and_finished_batches_stay_cached(other_weights_server, tmp_path):
    lm = sl.load_lm(SERVED, server=other_weights_server.url, timeout=60)
    committed = threading.Event()

    class Watched(ScoreCache):
        """A real cache that says when the first finished batch was written."""

        def put_many(self, rows):
            super().put_many(rows)
            committed.set()

    store = Watched(tmp_path / "scores.sqlite")
    reqs = [(f"Item {i}: {c}", x) for i in range(2) for c, x in PAIRS]
    killed_at: list[float] = []

    def kill_after_first_batch():
        if committed.wait(300):
            other_weights_server.kill()
            killed_at.append(time.monotonic())

    killer = threading.Thread(target=kill_after_first_batch, daemon=True)
    killer.start()
    with pytest.raises(ServerError,
                       match=r"server http://127\.0\.0\.1:\d+/v1: unreachable after 5 tries .*is it running"):
        engine.logprobs(lm, reqs, cache=store, progress=False, batch_size=8)
    ended = time.monotonic()
    killer.join(5)
    assert killed_at, "the server was never killed: no batch finished"
    assert ended - killed_at[0] < 60  # the back-off (7.5 s) plus the requests in flight, well within the timeout
    encs = [text.encode(lm, c, x) for c, x in reqs]
    kept = store.get_many([request_key(lm.fingerprint, e.input_ids, e.start) for e in encs])
    assert 8 <= len(kept) < len(reqs)
    for e in encs[:3]:
        entry = kept.get(request_key(lm.fingerprint, e.input_ids, e.start))
        assert entry is None or np.isfinite(entry["logprob"]).all()


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return not any(line.startswith("State:") and "Z" in line.split()[1] for line in f)
    except FileNotFoundError:
        return False


def test_the_server_dies_with_the_process_that_started_it():
    """Even a SIGKILLed test run leaves no server behind (the server gets SIGTERM when its parent dies)."""
    import subprocess
    import sys

    code = ("import sys, time; from surfacelab.backends.vllm_server import LocalServer; "
            "s = LocalServer(sys.argv[1], python=sys.argv[2]).start(); print(s.proc.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code, str(model_dir()), vllm_python()], stdout=subprocess.PIPE,
                              text=True)
    pid = int(parent.stdout.readline())
    try:
        time.sleep(2)
        assert _alive(pid)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 30
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)
