"""Scoring that reads a real vLLM server's prefix cache (``backends.vllm_tokens``): the numbers of the in-process
model with the cache read and not, the server's own ``/metrics`` agreeing with the cached-token counts, answers whose
rows do not check out sent again, and servers without the route scoring whole through ``/v1/completions``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import numpy as np
import pytest

import surfacelab as sl
from surfacelab import engine, tasks
from surfacelab.backends.transport import ServerError
from surfacelab.backends.vllm_tokens import PROBE_TRIES, ROUTE, prompt_tokens
from surfacelab.engine.cache import ScoreCache

from vllm_env import SERVED

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


@pytest.fixture(scope="module")
def fewshot_requests(data_root):
    """5-shot MMLU: three questions under the same five worked examples (about 500 tokens), every option under
    the question and under the domain premise."""
    task = tasks.load("mmlu", "test", source=data_root, limit=3, n_shot=5)
    return [r for it in task.items for r in it.requests() + it.domain_requests()]


@pytest.fixture(scope="module")
def reference(real_lm, fewshot_requests):
    return engine.logprobs(real_lm, fewshot_requests, cache=False, progress=False, top_k=5)


def assert_same_numbers(got, ref) -> None:
    """The in-process model's numbers to 1e-3 (per token and summed), its top-5 where they are not near-ties."""
    worst = max(abs(g.total - r.total) for g, r in zip(got, ref))
    print(f"\nmax |Δ| of summed log-probs, server vs in-process, {len(ref)} requests: {worst:.2e}")
    assert worst <= 1e-3
    for g, r in zip(got, ref):
        assert g.encoding == r.encoding
        np.testing.assert_allclose(g.logprob, r.logprob, atol=1e-3)
        np.testing.assert_allclose(g.top_logprobs, r.top_logprobs, atol=1e-3)
        assert (g.rank[r.rank <= 5] == r.rank[r.rank <= 5]).all()


def shot_requests(requests) -> int:
    """The requests under the five worked examples (the domain premise's are a few tokens, below one block)."""
    return len({r for r in requests if len(r[0]) > 500})


def metrics(url: str) -> tuple[int, int]:
    return prompt_tokens(httpx.get(url.removesuffix("/v1") + "/metrics", timeout=30).text)


def scored_through(lm, url: str, requests, reference) -> tuple[object, int, int]:
    """``requests`` scored by ``lm`` through the server at ``url``, checked against ``reference``; the results and
    the prompt tokens the server was sent and computed meanwhile (its ``/metrics``), which its answers' cached-token
    counts must agree with."""
    sent_before, cached_before = metrics(url)
    got = engine.logprobs(lm, requests, cache=False, progress=False, top_k=5)
    sent_after, cached_after = metrics(url)
    assert_same_numbers(got, reference)
    sent, computed = sent_after - sent_before, (sent_after - sent_before) - (cached_after - cached_before)
    print(f"server: {sent} prompt tokens sent, {computed} computed ({got.stats.paths})")
    assert computed == got.stats.tokens_forwarded  # what the answers' cached_tokens said == the server's counters
    return got, sent, computed


@pytest.mark.parametrize("read_cache", [True, False], ids=["cache-read", "cache-off"])
def test_prefix_reuse_gives_the_in_process_numbers_and_the_server_counts_agree(prefix_server, fewshot_requests,
                                                                               reference, read_cache):
    lm = sl.load_lm(SERVED, server=prefix_server.url)
    assert lm.backend.capabilities.reads_cache and lm.backend.capabilities.block_size == 32
    lm.backend.read_cache = read_cache
    got, sent, computed = scored_through(lm, prefix_server.url, fewshot_requests, reference)
    if read_cache:  # all but the first read the shots from the cache (or were refused doing so and resent)
        paths = got.stats.paths
        assert paths.get("server-cache", 0) + paths.get("server-resent", 0) >= shot_requests(fewshot_requests) - 1
        assert paths.get("server-resent", 0) <= lm.backend.route.refusals and lm.backend.route.untrusted == 0
        assert computed <= 0.5 * sent  # the five shots were computed once
    else:
        assert got.stats.paths == {"server": got.stats.unique}
        assert computed == sent


def test_a_hit_that_covers_the_first_continuation_rows_takes_them_from_the_sibling_that_computed_them(
        prefix_server, real_lm):
    # the options share their first 20-odd tokens, so a sibling's cache hit (whole 32-token blocks) reaches past the
    # context into rows the request needs; the same tokens before and at a position give the same row
    common = (" the old mill by the river, where the miller's daughter kept bees and sold honey at the market in the"
              " square")
    requests = [("Question: where did the long summer of the story begin?\nAnswer:", common + end)
                for end in (" every Saturday", " on Sunday mornings", " all week")]
    reference = engine.logprobs(real_lm, requests, cache=False, progress=False, top_k=5)
    start = reference[0].encoding.start
    assert all(len(r.encoding.input_ids) - start > 20 for r in reference)
    lm = sl.load_lm(SERVED, server=prefix_server.url)
    got, sent, computed = scored_through(lm, prefix_server.url, requests, reference)
    resent = got.stats.paths.get("server-resent", 0)
    assert got.stats.paths.get("server-cache", 0) + resent == 2 and resent <= lm.backend.route.refusals
    if not resent:  # neither sibling computed the context again
        assert computed <= sent - 2 * start


#: the answer vLLM's CPU build sometimes gives a request that reads its prefix cache (a row it cannot write as JSON)
REFUSED = {"error": {"message": "Out of range float values are not JSON compliant", "type": "BadRequestError",
                     "param": None, "code": 400}}


class TamperingProxy:
    """A proxy on 127.0.0.1 in front of a real server that rewrites the token route's answers: ``mode`` "shuffle"
    (the rows past the hit in reverse order), "shorten" (the last row dropped), "v2" (vLLM's GPU V2 layout: only the
    computed rows, after one placeholder) for answers that read the cache; "no-counts" (no ``prompt_tokens_details``)
    or "positive" (the last token's log-prob +5.0) for every answer; "refuse-reads" answers every request that reads
    the cache as vLLM's CPU build sometimes does (``REFUSED``), without passing it on; None passes answers through.
    ``tampered`` counts rewritten or refused answers."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.removesuffix("/v1")
        self.mode: str | None = None
        self.tampered = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _relay(self, method: str) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
                if proxy.mode == "refuse-reads" and self.path == ROUTE and body and \
                        not json.loads(body)["sampling_params"]["skip_reading_prefix_cache"]:
                    proxy.tampered += 1
                    return self._answer(400, json.dumps(REFUSED).encode(), "application/json")
                resp = httpx.request(method, proxy.upstream + self.path, content=body, timeout=300,
                                     headers={"Content-Type": "application/json"} if body else {})
                data = resp.content
                if self.path == ROUTE and resp.status_code == 200:
                    data = json.dumps(proxy.rewrite(resp.json(), json.loads(body)["token_ids"])).encode()
                self._answer(resp.status_code, data, resp.headers.get("content-type", "application/json"))

            def _answer(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._relay("GET")

            def do_POST(self):
                self._relay("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def rewrite(self, answer: dict, ids: list[int]) -> dict:
        details = answer["usage"].get("prompt_tokens_details") or {}
        cached, rows = details.get("cached_tokens") or 0, answer["prompt_logprobs"]
        if self.mode == "no-counts":
            answer["usage"].pop("prompt_tokens_details", None)
        elif self.mode == "positive":  # the last row's own token at +5.0, whether read past the cache or not
            rows[-1][str(ids[-1])]["logprob"] = 5.0
            self.tampered += 1
        elif self.mode and cached:
            if self.mode == "shuffle":
                answer["prompt_logprobs"] = rows[:cached + 1] + rows[cached + 1:][::-1]
            elif self.mode == "shorten":
                answer["prompt_logprobs"] = rows[:-1]
            elif self.mode == "v2":
                answer["prompt_logprobs"] = [None] + rows[cached + 1:]
            self.tampered += 1
        return answer

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def proxy(prefix_server):
    p = TamperingProxy(prefix_server.url)
    yield p
    p.close()


@pytest.mark.parametrize("mode", ["shuffle", "shorten"])
def test_rows_that_do_not_check_out_are_sent_again_with_the_cache_off(proxy, fewshot_requests, reference, mode):
    lm = sl.load_lm(SERVED, server=proxy.url)
    assert lm.backend.route is not None
    proxy.mode = mode
    with pytest.warns(UserWarning, match="did not check out.*sent again with the cache off"):
        got = engine.logprobs(lm, fewshot_requests, cache=False, progress=False, top_k=5)
    assert proxy.tampered > 0 and lm.backend.route.untrusted == proxy.tampered
    assert proxy.tampered <= got.stats.paths.get("server-resent") <= proxy.tampered + lm.backend.route.refusals
    assert_same_numbers(got, reference)


def test_an_impossible_row_is_refused_and_nothing_is_cached(proxy, fewshot_requests, tmp_path):
    lm = sl.load_lm(SERVED, server=proxy.url)
    store = ScoreCache(tmp_path / "scores.sqlite")
    proxy.mode = "positive"
    with pytest.raises(ServerError, match=rf"server {proxy.url}: impossible answer to request \d+ \(.*\): "
                                          r"log-prob \+5\.0 > 0 at token \d+"):
        engine.logprobs(lm, fewshot_requests, cache=store, progress=False)
    proxy.mode = None
    assert engine.logprobs(lm, fewshot_requests[:1], cache=store, progress=False).stats.cached == 0


def test_the_layout_of_only_the_computed_rows_is_read(proxy, fewshot_requests, reference):
    proxy.mode = "v2"  # the probe at connect sees it too
    lm = sl.load_lm(SERVED, server=proxy.url)
    assert lm.backend.capabilities.reads_cache
    proxy.tampered = 0
    got = engine.logprobs(lm, fewshot_requests, cache=False, progress=False, top_k=5)
    assert proxy.tampered > 0 and lm.backend.route.untrusted == 0
    assert got.stats.paths.get("server-cache", 0) == proxy.tampered
    assert_same_numbers(got, reference)


def test_a_server_without_the_route_scores_whole_through_completions(vllm_server, api_key, fewshot_requests,
                                                                     reference):
    with warnings.catch_warnings():  # said once per server and process (the next test), perhaps by an earlier test
        warnings.simplefilter("ignore")
        lm = sl.load_lm(SERVED, server=vllm_server.url, api_key=api_key)
    assert lm.backend.route is None and not lm.backend.capabilities.route
    got = engine.logprobs(lm, fewshot_requests, cache=False, progress=False, top_k=5)
    assert got.stats.paths == {"server": got.stats.unique}
    assert_same_numbers(got, reference)


def route_calls(url: str) -> int:
    """POSTs the server has answered on its token route (its ``/metrics``: ``http_requests_total``), any status."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=30).text
    return int(sum(float(v) for v in re.findall(rf'^http_requests_total{{[^}}]*handler="{ROUTE}"[^}}]*}} (\S+)$',
                                               text, re.M)))


def test_a_second_load_of_the_same_server_sends_no_probe(prefix_server, fewshot_requests, reference):
    first = sl.load_lm(SERVED, server=prefix_server.url)
    before = route_calls(prefix_server.url)
    second = sl.load_lm(SERVED, server=prefix_server.url)
    assert route_calls(prefix_server.url) == before  # neither the route's probe nor anything else on the route
    assert second.backend.capabilities == first.backend.capabilities and second.backend.capabilities.reads_cache
    assert second.backend.route is not first.backend.route  # its own counters, its own read_cache
    got = engine.logprobs(second, fewshot_requests[:8], cache=False, progress=False, top_k=5)
    assert_same_numbers(got, reference[:8])
    assert route_calls(prefix_server.url) > before


LOAD_TWICE = """
import json, sys, warnings
import surfacelab as sl
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    for _ in range(2):
        lm = sl.load_lm(sys.argv[1], server=sys.argv[2])
print(json.dumps([str(w.message) for w in seen if "computes every prompt whole" in str(w.message)]))
"""


def test_a_plain_server_is_warned_about_once_per_process(vllm_server, api_key):
    # a process of its own: this one may have loaded the server before; the key as a user gives it, for that server
    env = {**os.environ, "SURFACELAB_SERVER": vllm_server.url, "SURFACELAB_API_KEY": api_key}
    before = route_calls(vllm_server.url)
    done = subprocess.run([sys.executable, "-c", LOAD_TWICE, SERVED, vllm_server.url], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    warned = json.loads(done.stdout.strip().splitlines()[-1])
    # vLLM 0.32 answers 403 on the route of a server started without it; not an API-key problem
    assert len(warned) == 1 and re.search(
        r"computes every prompt whole through /v1/completions: no token route \(refused POST "
        r"/inference/v1/generate \(HTTP 403\): Scale-out endpoints are disabled.*start vLLM with "
        r"--enable-scale-out --enable-prompt-tokens-details", warned[0]), warned
    assert route_calls(vllm_server.url) == before + 1  # the first load's probe; the second sent none


def test_a_route_without_cached_token_counts_is_not_read(proxy, fewshot_requests, reference):
    proxy.mode = "no-counts"
    with pytest.warns(UserWarning, match="computes every prompt whole through /v1/completions: its answers do not "
                                         "count cached prompt tokens; start vLLM with --enable-scale-out "
                                         "--enable-prompt-tokens-details"):
        lm = sl.load_lm(SERVED, server=proxy.url)
    assert lm.backend.route is None and lm.backend.capabilities.route
    got = engine.logprobs(lm, fewshot_requests, cache=False, progress=False, top_k=5)
    assert got.stats.paths == {"server": got.stats.unique}
    assert_same_numbers(got, reference)


def test_a_probe_whose_cache_reads_were_refused_is_made_again_at_the_next_load(proxy, fewshot_requests, reference):
    # a refused probe was remembered for the process: every later load of the server scored every prompt whole
    proxy.mode = "refuse-reads"
    with pytest.warns(UserWarning, match=rf"refused a request that reads its prefix cache {PROBE_TRIES} times "
                                         r"\(.*Out of range float values"):
        first = sl.load_lm(SERVED, server=proxy.url)
    assert first.backend.route is None and proxy.tampered == PROBE_TRIES
    proxy.mode = None
    second = sl.load_lm(SERVED, server=proxy.url)
    assert second.backend.capabilities.reads_cache and second.backend.route is not None
    got = engine.logprobs(second, fewshot_requests[:8], cache=False, progress=False, top_k=5)
    assert got.stats.paths.get("server-cache", 0) > 0
    assert_same_numbers(got, reference[:8])
