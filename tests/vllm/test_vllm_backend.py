"""The vLLM server backend against a real vLLM server: same numbers and views as in-process, clear failures."""

from __future__ import annotations

import io
import logging
import pickle
import threading
from contextlib import redirect_stderr, redirect_stdout
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import surfacelab as sl
from surfacelab import engine, letters, paraphrase, tasks, text
from surfacelab.alternatives import token_view
from surfacelab.backends.base import RANK_TOL
from surfacelab.backends.transport import ServerError
from surfacelab.backends.vllm import VLLMBackend
from surfacelab.engine.cache import ScoreCache

from vllm_env import SERVED, model_dir
from test_engine import PAIRS
from tiny_models import tiny_causal

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_parity_with_the_in_process_backend(remote_lm, real_lm, capsys):
    """Summed log-probs of the engine's parity set agree to 1e-3 nats; ranks and top-k agree where the
    numbers are not near-ties."""
    got = engine.logprobs(remote_lm, PAIRS, cache=False, progress=True, top_k=5)
    ref = engine.logprobs(real_lm, PAIRS, cache=False, progress=False, top_k=5)
    assert got.stats.backend == "vllm" and got.stats.paths == {"server": got.stats.unique}
    assert got.stats.unique < got.stats.requests == len(PAIRS)  # duplicates went to the server once
    assert "scoring via smollm2-135m: 100%|" in capsys.readouterr().err  # the progress bar counts unique requests
    worst = max(abs(g.total - r.total) for g, r in zip(got, ref))
    print(f"\nmax |Δ| of summed log-probs, server vs in-process, {len(PAIRS)} requests: {worst:.2e}")
    assert worst <= 1e-3
    for g, r in zip(got, ref):
        assert g.encoding == r.encoding
        np.testing.assert_allclose(g.logprob, r.logprob, atol=1e-3)
        assert np.isnan(g.entropy).all() and not np.isnan(r.entropy).any()
        near = r.rank <= 5  # inside the top-k the tolerant rank is exact
        assert (g.rank[near] == r.rank[near]).all()
        assert (np.abs(g.rank - r.rank) <= np.maximum(2, 0.001 * r.rank)).all()
        assert (g.greedy == r.greedy).all()
        gaps = np.diff(r.top_logprobs, axis=1)
        clear = np.concatenate([gaps < -10 * RANK_TOL, np.ones((len(gaps), 1), bool)], axis=1)
        clear &= np.concatenate([np.ones((len(gaps), 1), bool), gaps < -10 * RANK_TOL], axis=1)
        assert (g.top_ids[clear] == r.top_ids[clear]).all()
        np.testing.assert_allclose(g.top_logprobs, r.top_logprobs, atol=1e-3)


def test_score_table_token_view_and_cache(remote_lm, real_lm, tmp_path):
    premise, options = "The man took a bath in the", [" bathtub", " xylophone", " tub", " bath tub"]
    store = ScoreCache(tmp_path / "scores.sqlite")
    a = sl.score(remote_lm, premise, options, domain_premise=" the", cache=store)
    b = sl.score(real_lm, premise, options, domain_premise=" the", cache=False)
    numeric = [c for c in b.table.columns if b.table[c].dtype.kind == "f"]
    np.testing.assert_allclose(a.table[numeric], b.table[numeric], atol=1e-3)
    assert (a.table["option"] == b.table["option"]).all()
    assert a.tokens["entropy"].isna().all() and not b.tokens["entropy"].isna().any()
    tv_a, tv_b = token_view(remote_lm, a, top_k=3), token_view(real_lm, b, top_k=3)
    np.testing.assert_allclose(tv_a["contribution"], tv_b["contribution"], atol=1e-3)
    assert ([[t for t, _ in alts] for alts in tv_a["alternatives"]]
            == [[t for t, _ in alts] for alts in tv_b["alternatives"]])
    again = engine.logprobs(remote_lm, [(premise, o) for o in options], cache=store, progress=False)
    assert again.stats.cached == again.stats.unique == len(options) and again.stats.batches == 0
    assert [s.total for s in again] == pytest.approx(list(a.table["logprob"]), abs=1e-6)


def test_a_proxy_in_the_environment_does_not_catch_a_server_on_this_machine(vllm_server, api_key, monkeypatch):
    # a proxy set for the package registry (nothing listens on port 9) and no NO_PROXY
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    lm = sl.load_lm(SERVED, server=vllm_server.url, api_key=api_key)
    res = sl.score(lm, "The man took a bath in the", [" bathtub", " tub"], cache=False)
    assert np.isfinite(res.table["logprob"]).all()


def test_fingerprint_is_stable_and_not_the_in_process_one(vllm_server, api_key, remote_lm, real_lm):
    second = sl.load_lm("smollm2-135m", server=vllm_server.url, api_key=api_key)
    assert second.fingerprint == remote_lm.fingerprint != real_lm.fingerprint
    assert remote_lm.max_length == 2047 and remote_lm.model is None and remote_lm.backend.has_entropy is False


def test_evaluate_predictions_match(remote_lm, real_lm, data_root):
    copa = tasks.load("copa", "val", source=data_root, limit=16)
    a = sl.evaluate(remote_lm, copa, "lm,avg,per_char,unc,dcpmi", progress=False, n_boot=0)
    b = sl.evaluate(real_lm, copa, "lm,avg,per_char,unc,dcpmi", progress=False, n_boot=0)
    pred = [c for c in b.items.columns if c.startswith("pred")]
    assert pred and a.items[pred].equals(b.items[pred])
    np.testing.assert_allclose(a.scores["dcpmi"], b.scores["dcpmi"], atol=1e-3)
    grid = [sl.ablate(lm, copa, domain_premises=[None, " so"], scorers="lm,dcpmi", progress=False, n_boot=0)
            for lm in (remote_lm, real_lm)]
    assert grid[0][["domain_premise", "scorer", "accuracy"]].equals(grid[1][["domain_premise", "scorer", "accuracy"]])


def test_channel_mcf_and_choices_on_the_server_equal_the_in_process_ones(remote_lm, real_lm, data_root):
    arc = tasks.load("arc-challenge", source=data_root, limit=8)
    a, b = (sl.evaluate(lm, arc, "channel,mcf,choices", progress=False, n_boot=0) for lm in (remote_lm, real_lm))
    for s in ("channel", "mcf", "choices"):
        assert np.isfinite(a.scores[s]).all()
        np.testing.assert_allclose(a.scores[s], b.scores[s], atol=1e-3)
    assert a.items[["pred_channel", "pred_mcf", "pred_choices"]].equals(b.items[["pred_channel", "pred_mcf",
                                                                                  "pred_choices"]])


def test_letter_distributions_match(remote_lm, real_lm):
    q, opts = "What is the capital of France?", ["Berlin", "Paris", "Rome", "Madrid"]
    a = letters.score(remote_lm, q, opts, gold=1, cache=False)
    b = letters.score(real_lm, q, opts, gold=1, cache=False)
    cols = ["p_space", "p_bare", "observed", "prior", "calibrated", "debiased"]
    np.testing.assert_allclose(a.table[cols], b.table[cols], atol=1e-4)
    assert a.winner("debiased") == b.winner("debiased")


def test_next_token_modes_agree(remote_lm, real_lm):
    """logprob_token_ids on the generated position ("generate") and appended prompt tokens ("append")
    give the in-process next-token distribution."""
    contexts = ["Answer:", "Q: 2+2=\nA:", "The capital of France is"]
    ids = [remote_lm.tokenizer.convert_tokens_to_ids(t) for t in ["A", "ĠA", "B", "ĠB", "ĠParis"]]
    ref = engine.next_token_logprobs(real_lm, contexts, token_ids=ids, top_k=4)
    backend = remote_lm.backend
    assert backend.next_token_mode == "generate"
    for mode in ("generate", "append"):
        backend.next_token_mode = mode
        try:
            got = engine.next_token_logprobs(remote_lm, contexts, token_ids=ids, top_k=4)
        finally:
            backend.next_token_mode = "generate"
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g.selected, r.selected, atol=1e-4)
            assert list(g.top_ids) == list(r.top_ids) and g.top_tokens == r.top_tokens
            assert np.isnan(g.entropy)


def test_paraphrase_mass_matches(remote_lm, real_lm):
    item = paraphrase.load_teaching_set()[0]
    a = paraphrase.mass_items(remote_lm, [item], top_k=5, progress=False, cache=False)[0]
    b = paraphrase.mass_items(real_lm, [item], top_k=5, progress=False, cache=False)[0]
    np.testing.assert_allclose(a.concepts["log_mass"], b.concepts["log_mass"], atol=1e-3)
    assert list(a.topk["token_id"]) == list(b.topk["token_id"])
    assert a.winner("mass") == b.winner("mass")


def test_why_on_a_server_lm(remote_lm, real_lm):
    args = dict(gold=" bathtub", domain_premise=" the", cache=False)
    a = sl.why(remote_lm, "The man took a bath in the", [" bathtub", " xylophone", " tub"], **args)
    b = sl.why(real_lm, "The man took a bath in the", [" bathtub", " xylophone", " tub"], **args)
    assert a.verdict == b.verdict and a.against == b.against
    np.testing.assert_allclose(a.terms["value"], b.terms["value"], atol=1e-3)
    np.testing.assert_allclose(a.attribution["delta_dcpmi"], b.attribution["delta_dcpmi"], atol=1e-3)
    assert list(a.competitors["token_id"]) == list(b.competitors["token_id"])
    with pytest.raises(ValueError, match="gradient: gradient × input needs an in-process model"):
        sl.why(remote_lm, "The man took a bath in the", [" bathtub", " tub"], gradient=True, **args)


def test_every_workbench_view_works_on_a_server_lm(remote_lm, real_lm, tiny_mlm):
    from surfacelab.widgets import VIEWS, Workbench

    frames = []
    for lm in (remote_lm, real_lm):
        bench = Workbench(lm=lm, mlm=tiny_mlm, live=False)
        bench.premise_box.value = "The man took a bath in the"
        bench.domain_box.value = " the"
        bench.set_options([" bathtub", " soap", " milk"], ["tub, bath tub", "", ""], gold=0)
        bench.update()
        assert bench.message.value == ""
        assert set(bench.figures()) >= {"scores", "tokens", "paraphrase", "letters"}
        frames.append(bench.frames())
    remote, local = frames
    assert set(remote) == set(local) == set(VIEWS)
    np.testing.assert_allclose(remote["scores"]["dcpmi"], local["scores"]["dcpmi"], atol=1e-3)
    np.testing.assert_allclose(remote["tokens"]["contribution"], local["tokens"]["contribution"], atol=1e-3)
    np.testing.assert_allclose(remote["letters"]["observed"], local["letters"]["observed"], atol=1e-4)


# ----------------------------------------------------------------------------- refusals


def test_a_server_serving_another_model_is_refused(vllm_server, api_key, tmp_path):
    model, tokenizer = tiny_causal()  # a 400-token vocabulary
    with pytest.raises(ServerError, match="vocabulary is larger than the local tokenizer's"):
        sl.load_lm((model, tokenizer), server=vllm_server.url, api_key=api_key)
    # same vocabulary size, other token ids: two tokens of the probe text swap ids
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir())
    vocab = tok.backend_tokenizer.to_str()
    a, b = tok.convert_ids_to_tokens(tok(" quick brown", add_special_tokens=False)["input_ids"])
    swapped = vocab.replace(f'"{a}":', '"\x00":').replace(f'"{b}":', f'"{a}":').replace('"\x00":', f'"{b}":')
    assert swapped != vocab
    (tmp_path / "tokenizer.json").write_text(swapped)
    for name in ("config.json", "tokenizer_config.json"):
        (tmp_path / name).write_text((model_dir() / name).read_text())
    with pytest.raises(ServerError, match="tokenizer differs from the local one"):
        sl.load_lm(str(tmp_path), server=vllm_server.url, api_key=api_key)


def test_unknown_served_model_lists_what_is_served(vllm_server, api_key):
    with pytest.raises(ServerError, match=r"served_model: 'gpt-5' is not served .* it serves: smollm2-135m"):
        sl.load_lm("smollm2-135m", server=vllm_server.url, api_key=api_key, served_model="gpt-5")


def test_bad_arguments_name_themselves(vllm_server, api_key, remote_lm):
    with pytest.raises(ValueError, match="server: expected an http"):
        sl.load_lm("smollm2-135m", server="127.0.0.1:8000")
    with pytest.raises(ValueError, match="device/dtype"):
        sl.load_lm("smollm2-135m", server=vllm_server.url, device="cpu")
    with pytest.raises(ValueError, match="max_length: 4096 does not fit the server's --max-model-len 2048"):
        sl.load_lm("smollm2-135m", server=vllm_server.url, api_key=api_key, max_length=4096)
    with pytest.raises(ValueError, match="top_k: 25 exceeds the 20 log-probs.*--max-logprobs"):
        engine.logprobs(remote_lm, [("a", " b")], top_k=25, cache=False)


def test_the_server_refusing_a_request_is_a_clear_error(remote_lm):
    enc = text.Encoding("", "", (1, 2, remote_lm.vocab_size + 5), 2, ((0, 1),), False, 0)
    stats = engine.EngineStats()
    with pytest.raises(ServerError, match=r"refused POST /completions \(HTTP 400\): Token id \d+ is out of vocabulary"):
        remote_lm.backend.score([enc], top_k=0, batch_size=None, progress=False, stats=stats)


def test_a_cancelled_call_stops_between_http_calls_and_keeps_the_finished_ones(remote_lm, tmp_path):
    store = ScoreCache(tmp_path / "c.sqlite")
    requests = [(f"Cancel me {i}: the man took a bath in the", " tub") for i in range(6)]
    sent = []

    def after_the_first_calls() -> bool:  # checked before each HTTP call: true once as many as run at once are sent
        sent.append(1)
        return len(sent) > remote_lm.backend.http.concurrency

    with pytest.raises(engine.Cancelled), engine.cancelled_when(after_the_first_calls):
        engine.logprobs(remote_lm, requests, batch_size=1, cache=store, progress=False)
    again = engine.logprobs(remote_lm, requests, batch_size=1, cache=store, progress=False)
    assert 1 <= again.stats.cached <= remote_lm.backend.http.concurrency  # what was answered before it is kept


def test_a_long_prompt_is_truncated_to_the_server_window(remote_lm, real_lm):
    context = "word " * 3000
    s = engine.logprobs(remote_lm, [(context, " end")], cache=False, progress=False)[0]
    assert s.encoding.truncated > 0 and len(s.encoding.input_ids) == remote_lm.max_length
    np.isfinite(s.logprob).all()


class _Static(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_something_that_is_not_vllm_is_a_clear_error(tmp_path):
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "models").write_text("<html>not json</html>")
    handler = lambda *a, **k: _Static(*a, directory=str(tmp_path), **k)  # noqa: E731
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        with pytest.raises(ServerError, match="malformed answer to GET /models \\(not JSON\\)"):
            sl.load_lm("smollm2-135m", server=url)
        (tmp_path / "v1" / "models").write_text('{"data": [{"id": "m"}]}')
        with pytest.raises(ServerError, match=r"refused POST /completions \(HTTP 501\)"):
            sl.load_lm("smollm2-135m", server=url)
    finally:
        httpd.shutdown()


def test_no_server_is_a_clear_error_not_a_hang():
    from surfacelab.backends.vllm_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ServerError, match=r"unreachable after 5 tries \(ConnectError.*is it running"):
        sl.load_lm("smollm2-135m", server=url)


# ----------------------------------------------------------------------------- the API key


def test_api_key_is_required_and_never_leaks(vllm_server, api_key, remote_lm, monkeypatch, caplog, tmp_path,
                                            data_root):
    with pytest.raises(ServerError, match=r"refused the API key \(HTTP 401\).*\(none was sent\)"):
        sl.load_lm("smollm2-135m", server=vllm_server.url)
    with pytest.raises(ServerError, match=r"refused the API key \(HTTP 401\).*\(a key was sent\)") as wrong:
        sl.load_lm("smollm2-135m", server=vllm_server.url, api_key="not-the-key")
    assert "not-the-key" not in str(wrong.value)
    monkeypatch.setenv("SURFACELAB_API_KEY", api_key)
    monkeypatch.delenv("SURFACELAB_SERVER", raising=False)
    with pytest.raises(ServerError, match=r"SURFACELAB_SERVER.*\(none was sent\)"):  # the key is bound to no server
        sl.load_lm("smollm2-135m", server=vllm_server.url)
    monkeypatch.setenv("SURFACELAB_SERVER", vllm_server.url)
    out, err = io.StringIO(), io.StringIO()
    with caplog.at_level(logging.DEBUG), redirect_stdout(out), redirect_stderr(err):
        lm = sl.load_lm("smollm2-135m", server=vllm_server.url)  # the key from the environment
        res = sl.score(lm, "The man took a bath in the", [" tub", " bathtub"], cache=False)
        ev = sl.evaluate(lm, tasks.load("copa", "val", source=data_root, limit=2), "lm", progress=True, n_boot=0)
        print(repr(lm), lm, lm.backend, vars(lm.backend), res.meta, ev.meta)
    folder = ev.save(tmp_path / "eval")
    saved = res.save(tmp_path / "result.json").read_text() + "".join(p.read_text() for p in folder.iterdir())
    seen = [out.getvalue(), err.getvalue(), caplog.text, repr(lm), str(vars(lm)), lm.fingerprint, lm.source,
            res.table.to_csv(), res.tokens.to_csv(), str(ev.meta), ev.items.to_csv(), saved]
    assert lm.fingerprint == remote_lm.fingerprint  # the key is no part of the cache key
    for s in seen:
        assert api_key not in s
    state = pickle.dumps(lm.backend)
    assert api_key.encode() not in state
    restored = pickle.loads(state)  # an unpickled copy reads the key from the environment again (for its server)
    assert engine.logprobs(restored_lm(lm, restored), [("a", " b")], cache=False)[0].n_tokens == 1


def restored_lm(lm, backend: VLLMBackend):
    """``lm`` with another backend."""
    import dataclasses

    return dataclasses.replace(lm, backend=backend)
