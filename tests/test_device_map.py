"""load_lm(device_map=...): accelerate places the layers, inputs follow the embeddings, numbers unchanged."""

import pytest
import torch

import surfacelab as sl
from surfacelab import engine


@pytest.fixture(scope="module")
def folder(tmp_path_factory, tiny_lm):
    path = tmp_path_factory.mktemp("tiny")
    tiny_lm.model.save_pretrained(path)
    tiny_lm.tokenizer.save_pretrained(path)
    return str(path)


@pytest.mark.parametrize("device_map", ["auto", {"": "cpu"}])
def test_device_map_loads_the_same_model(folder, tiny_lm, device_map):
    lm = sl.load_lm(folder, device_map=device_map)
    assert lm.device == torch.device("cpu") and lm.dtype == torch.float32
    assert lm.fingerprint == tiny_lm.fingerprint
    reqs = [("The man took a bath in the", " tub"), ("A cat sat on the", " mat")]
    got = engine.logprobs(lm, reqs, cache=False, progress=False)
    ref = engine.logprobs(tiny_lm, reqs, cache=False, progress=False)
    assert [s.total for s in got] == pytest.approx([s.total for s in ref], abs=1e-5)


def test_device_map_with_a_dtype(folder, tiny_lm):
    lm = sl.load_lm(folder, device_map="auto", dtype="bf16")
    assert lm.dtype == torch.bfloat16 and next(lm.model.parameters()).dtype == torch.bfloat16
    assert lm.fingerprint != tiny_lm.fingerprint
    req = [("A cat sat on the", " mat")]
    bf16 = engine.logprobs(lm, req, cache=False, progress=False)[0]
    fp32 = engine.logprobs(tiny_lm, req, cache=False, progress=False)[0]
    assert 0 < abs(bf16.total - fp32.total) < 0.1  # bf16 weights, float32 log-softmax


def test_device_map_refuses_what_it_cannot_place(folder, tiny_lm):
    for kwargs in ({"device": "cpu"}, {"server": "http://127.0.0.1:9/v1"}):
        with pytest.raises(ValueError, match="device_map: places a model loaded here"):
            sl.load_lm(folder, device_map="auto", **kwargs)
    with pytest.raises(ValueError, match="device_map"):
        sl.load_lm((tiny_lm.model, tiny_lm.tokenizer), device_map="auto")
