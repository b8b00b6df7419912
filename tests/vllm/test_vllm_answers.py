"""What a server answers is checked before anything is cached, and ``timeout=`` bounds a whole request.

A fake OpenAI-compatible completions server (``http.server`` in a thread on 127.0.0.1) answers like vLLM
with the tiny causal model, until a test gives it a fault: an impossible log-prob or rank, an unsorted
top-k, or an answer trickled one byte per second. No real vLLM runs here (no ``vllm`` marker).
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import torch

import surfacelab as sl
from surfacelab import engine
from surfacelab.backends.transport import ServerError
from surfacelab.engine.cache import ScoreCache

from test_cli import lm_dir, run  # noqa: F401 - the tiny causal model saved to a folder, for the CLI
from tiny_models import tiny_causal

SERVED = "tiny-fake"
REQUESTS = [("The man took a bath in the", " bathtub"), ("A cat sat on the", " mat"),
            ("The woman went to the store because she needed", " milk and bread")]
#: bytes of a trickled answer sent one per second before the rest (a client without a deadline gets it all)
TRICKLED = 8
#: prompt tokens per second of the "slow" fault (the client's deadline rule asks for 2048 at timeout=2)
SLOW_RATE = 3000


class FakeVLLM:
    """vLLM's ``/v1/models`` and ``/v1/completions`` (``prompt_logprobs`` by token id, ranks, top-k) for the tiny
    model; ``fault`` corrupts the scoring answers (token-id prompts with ``prompt_logprobs``), never the load checks.

    Faults, at the last position of the batch's second request: "positive" (log-prob +5.0), "infinite"
    (``Infinity``), "rank0" (rank 0), "unsorted" (the rank-2 alternative above the rank-1 one); "trickle" sends
    status and headers, then the body one byte per second (``TRICKLED`` bytes, then the rest); "slow" works through
    one scoring call at a time at ``SLOW_RATE`` prompt tokens per second, as a busy server does.
    """

    def __init__(self) -> None:
        self.model, self.tokenizer = tiny_causal()
        self.fault: str | None = None
        self.busy = threading.Lock()  # the "slow" fault's one call at a time
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.fake = self
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def prompt_logprobs(self, ids: list[int], k: int) -> list[dict | None]:
        """vLLM's per-position answer: the prompt's token (its rank counts the tokens above it) and the top k."""
        with torch.no_grad():
            lps = torch.log_softmax(self.model(torch.tensor([ids])).logits[0], -1)
        out: list[dict | None] = [None]
        for pos in range(1, len(ids)):
            row = lps[pos - 1]
            top = torch.topk(row, k)
            entry = {str(t): {"logprob": float(v), "rank": r + 1, "decoded_token": ""}
                     for r, (v, t) in enumerate(zip(top.values.tolist(), top.indices.tolist()))}
            target = row[ids[pos]]
            entry.setdefault(str(ids[pos]), {"logprob": float(target), "rank": int((row > target).sum()) + 1,
                                             "decoded_token": ""})
            out.append(entry)
        return out

    def corrupt(self, choices: list[dict]) -> None:
        """Apply ``fault`` to the last position of the second request (the first, alone)."""
        choice = choices[min(1, len(choices) - 1)]
        entry = choice["prompt_logprobs"][-1]
        target = entry[str(choice["prompt_token_ids"][-1])]
        if self.fault == "unsorted":
            first, second = sorted(entry.values(), key=lambda v: v["rank"])[:2]
            second["logprob"] = first["logprob"] / 2  # rank 2 now clearly more likely than rank 1
        elif self.fault == "positive":
            target["logprob"] = 5.0
        elif self.fault == "infinite":
            target["logprob"] = math.inf  # json.dumps writes the literal Infinity
        elif self.fault == "rank0":
            target["rank"] = 0

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status: int, answer: dict, trickle: bool = False) -> None:
        body = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            if trickle:
                for i in range(TRICKLED):
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                    time.sleep(1.0)
                body = body[TRICKLED:]
            self.wfile.write(body)
        except OSError:  # the client gave up
            pass

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": SERVED, "max_model_len": 64}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        fake: FakeVLLM = self.server.fake
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.path != "/v1/completions":  # no token route: a server started without --enable-scale-out
            return self._send(404, {"detail": "Not Found"})
        prompts = [fake.tokenizer(p)["input_ids"] if isinstance(p, str) else p for p in body["prompt"]]
        if any(t >= len(fake.tokenizer) for p in prompts for t in p):
            return self._send(400, {"error": {"message": "Token id is out of vocabulary"}})
        k = body.get("prompt_logprobs")
        scoring = bool(k) and not isinstance(body["prompt"][0], str)
        slow = scoring and fake.fault == "slow"
        with fake.busy if slow else contextlib.nullcontext():  # a slow server's own forwards count in its rate
            start = time.monotonic()
            choices = [{"index": i, "text": "", "prompt_token_ids": p,
                        "prompt_logprobs": fake.prompt_logprobs(p, k) if k else None} for i, p in enumerate(prompts)]
            if slow:
                time.sleep(max(0.0, sum(map(len, prompts)) / SLOW_RATE - (time.monotonic() - start)))
        if scoring and fake.fault not in (None, "trickle", "slow"):
            fake.corrupt(choices)
        self._send(200, {"choices": choices}, trickle=scoring and fake.fault == "trickle")


@pytest.fixture
def fake():
    server = FakeVLLM()
    try:
        yield server
    finally:
        server.close()


def _load(fake: FakeVLLM, **kwargs):
    return sl.load_lm((fake.model, fake.tokenizer), server=fake.url, **kwargs)


@pytest.mark.parametrize("fault, problem", [
    ("positive", r"log-prob \+5\.0 > 0 at token \d+"),
    ("infinite", r"log-prob inf is not finite at token \d+"),
    ("rank0", r"rank 0 < 1 at token \d+"),
    ("unsorted", r"top-k not sorted: rank 2 \(.*\) above rank 1 \(.*\) at token \d+"),
], ids=["positive", "infinite", "rank0", "unsorted"])
def test_an_impossible_answer_is_refused_and_nothing_of_its_batch_is_cached(fake, tiny_lm, tmp_path, fault, problem):
    store = ScoreCache(tmp_path / "scores.sqlite")
    lm = _load(fake)
    fake.fault = fault
    with pytest.raises(ServerError, match=rf"server {fake.url}: .*request 1 \('A cat sat on the' \+ ' mat'\).*"
                                          + problem):
        engine.logprobs(lm, REQUESTS, cache=store, top_k=3 if fault == "unsorted" else 0, progress=False)
    fake.fault = None  # the server is fixed; a fresh load knows it by the same fingerprint
    fixed = _load(fake)
    assert fixed.fingerprint == lm.fingerprint
    got = engine.logprobs(fixed, REQUESTS, cache=store, progress=False)
    assert got.stats.cached == 0  # nothing of the refused batch was stored, the good requests included
    want = engine.logprobs(tiny_lm, REQUESTS, cache=False, progress=False)  # the same model in-process
    for g, w in zip(got, want):
        assert np.isfinite(g.logprob).all() and (g.logprob <= 0).all()
        np.testing.assert_allclose(g.logprob, w.logprob, atol=1e-4)
    assert engine.logprobs(fixed, REQUESTS, cache=store, progress=False).stats.cached == len(REQUESTS)


def test_a_trickling_server_is_cut_off_at_the_timeout(fake):
    lm = _load(fake, timeout=3)
    fake.fault = "trickle"
    start = time.monotonic()
    with pytest.raises(ServerError, match=rf"server {fake.url}: no answer to POST /completions within 3 s"):
        sl.score(lm, "The man took a bath in the", [" tub", " bathtub"], cache=False)
    assert time.monotonic() - start < 6


def test_a_slow_server_that_keeps_answering_finishes_the_run(fake, tiny_lm):
    # 8 calls in flight of 32 prompts of ~53 tokens, one at a time on the server: the last answers after ~4.5 s at
    # SLOW_RATE, twice the 2-second timeout; a call's deadline scales with the tokens it waits for
    lm = _load(fake, timeout=2)
    lm.backend.http.concurrency = 8
    reqs = [(" ".join(["the man took a bath in the tub"] * 4) + f" {i}", " bathtub") for i in range(256)]
    fake.fault = "slow"
    start = time.monotonic()
    got = engine.logprobs(lm, reqs, cache=False, progress=False)
    assert time.monotonic() - start > 4  # slower than the timeout, and finished
    want = engine.logprobs(tiny_lm, reqs, cache=False, progress=False)
    np.testing.assert_allclose([g.total for g in got], [w.total for w in want], atol=1e-4)


def test_a_deadline_error_says_how_the_deadline_was_set(fake):
    lm = _load(fake, timeout=1)
    fake.fault = "trickle"
    with pytest.raises(ServerError, match=r"within 1 s \(the whole request; timeout=1 s per 4,096 prompt tokens, "
                                          r"scaled with the \d+ this call sent and the 0 of the other calls in "
                                          r"flight with it"):
        sl.score(lm, "The man took a bath in the", [" tub"], cache=False)


def test_the_cli_ends_an_impossible_answer_in_one_line(fake, lm_dir, capsys):  # noqa: F811 - the imported fixture
    fake.fault = "positive"
    rc, out, err = run(capsys, ["score", "--premise", "The man took a bath in the", "--option", " tub", "--option",
                                " bathtub", "--model", lm_dir, "--server", fake.url])
    assert rc == 2, out
    *warned, last = err.strip().splitlines()  # the error in one line, after the load's warnings (a plain server)
    assert all(line.startswith("surfacelab score: warning: ") for line in warned) and "Traceback" not in err, err
    assert last.startswith(f"surfacelab score: error: server {fake.url}: ") and "log-prob +5.0 > 0" in last
