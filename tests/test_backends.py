"""The backend registry: load_lm / load_mlm pick a backend by name, refuse one of the wrong kind or place, and every
forward pass of the engine, causal or masked, runs on the backend the model holds (a registered one included)."""

from __future__ import annotations

import pytest

import surfacelab as sl
from surfacelab import engine
from surfacelab.backends import BACKENDS, BackendSpec, register_backend
from surfacelab.backends.masked import MaskedBackend, MaskedCopy
from surfacelab.backends.transformers import TransformersBackend
from tiny_models import tiny_causal, tiny_masked


def test_the_backends_and_their_defaults_are_listed():
    table = sl.list_backends().set_index("backend")
    assert {"transformers", "masked", "vllm"} <= set(table.index)
    assert table.loc["transformers", ["kind", "place", "default"]].tolist() == ["causal", "in-process", True]
    assert table.loc["vllm", ["kind", "place", "default"]].tolist() == ["causal", "server", True]
    assert table.loc["masked", ["kind", "place", "default"]].tolist() == ["masked", "in-process", True]


@pytest.mark.parametrize("call, message", [
    (lambda: sl.load_lm(tiny_causal(), backend="masked"), "backend: 'masked' runs masked models"),
    (lambda: sl.load_lm(tiny_causal(), backend="vllm"), "backend: 'vllm' needs server="),
    (lambda: sl.load_mlm(tiny_masked(), backend="transformers"), "backend: 'transformers' runs causal models"),
    (lambda: sl.load_lm(tiny_causal(), backend="transformer"), "did you mean 'transformers'"),
    (lambda: sl.load_lm("smollm2-135m", server="http://127.0.0.1:9/v1", backend="transformers"),
     "backend: 'transformers' runs in this process: leave server= out"),
])
def test_a_backend_of_the_wrong_kind_or_place_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        call()


@pytest.mark.parametrize("spec, message", [
    (BackendSpec("x", "seq2seq", "in-process", TransformersBackend), "kind must be one of"),
    (BackendSpec("x", "causal", "cloud", TransformersBackend), "place must be one of"),
    (BackendSpec("x", "causal", "in-process", "not callable"), "make must be callable"),
    (BackendSpec("transformers", "causal", "in-process", TransformersBackend), "already registered"),
])
def test_a_bad_backend_spec_is_refused(spec, message):
    with pytest.raises((ValueError, TypeError), match=message):
        register_backend(spec)


class CountingCausal(TransformersBackend):
    """The transformers backend, counting the encodings it is asked to score."""

    scored: list[int] = []

    def score(self, encodings, **kwargs):
        CountingCausal.scored.append(len(encodings))
        return super().score(encodings, **kwargs)


class CountingMasked(MaskedBackend):
    """The masked backend, counting the copies it is asked to score."""

    scored: list[int] = []

    def score(self, copies, **kwargs):
        CountingMasked.scored.append(len(copies))
        return super().score(copies, **kwargs)


@pytest.fixture
def counting():
    CountingCausal.scored.clear()
    CountingMasked.scored.clear()
    register_backend(BackendSpec("counting", "causal", "in-process", CountingCausal, "a test backend"))
    register_backend(BackendSpec("counting-masked", "masked", "in-process",
                                 lambda model, tokenizer, device, dtype, *, name, identity: CountingMasked(
                                     model, device, mask_id=tokenizer.mask_token_id, name=name), "a test backend"))
    yield
    for name in ("counting", "counting-masked"):
        BACKENDS.unregister(name)


def test_a_registered_backend_runs_every_forward_pass_of_the_model_loaded_on_it(counting, tiny_lm, tiny_mlm):
    lm = sl.load_lm(tiny_causal(), device="cpu", backend="counting")
    assert isinstance(lm.backend, CountingCausal)
    requests = [("The cat sat on the", " mat"), ("The cat sat on the", " sofa")]
    got = engine.logprobs(lm, requests, cache=False, progress=False)
    want = engine.logprobs(tiny_lm, requests, cache=False, progress=False)
    assert CountingCausal.scored == [2]
    assert [s.total for s in got] == pytest.approx([s.total for s in want], abs=1e-6)  # same weights, same numbers

    mlm = sl.load_mlm(tiny_masked(), device="cpu", backend="counting-masked")
    ids = tuple(mlm.tokenizer("the cat sat")["input_ids"])
    copies = [MaskedCopy(ids, (2,), (2,)), MaskedCopy(ids, (1, 2), (1, 2))]
    got = engine.masked_logprobs(mlm, copies, cache=False, progress=False)
    want = engine.masked_logprobs(tiny_mlm, copies, cache=False, progress=False)
    assert CountingMasked.scored == [2]
    assert [list(s.logprob) for s in got] == [pytest.approx(list(s.logprob), abs=1e-6) for s in want]


def test_the_load_ends_with_the_backends_own_warm_up(tiny_lm):
    # the warm-up is the backend's: a backend that is not the transformers one (or a subclass) gets its own call
    from surfacelab.models.progress import WARM_UP

    class Wrapped:
        """A backend of its own that hands the forward passes to the transformers backend and records its warm-up."""

        def __init__(self, *args, **kwargs):
            self.inner = TransformersBackend(*args, **kwargs)
            self.kind, self.vocab_size, self.has_entropy = "wrapped", self.inner.vocab_size, True
            self.warmed: list[str] = []

        def identity(self):
            return self.inner.identity()

        def warm_up(self):
            self.warmed.append(steps[-1])

        def score(self, encodings, **kwargs):
            return self.inner.score(encodings, **kwargs)

        def next_token(self, prompts, **kwargs):
            return self.inner.next_token(prompts, **kwargs)

    steps: list[str] = []
    register_backend(BackendSpec("wrapped", "causal", "in-process", Wrapped, "a test backend"))
    try:
        lm = sl.load_lm(tiny_causal(), device="cpu", backend="wrapped",
                        progress=lambda fraction, step: steps.append(step))
    finally:
        BACKENDS.unregister("wrapped")
    assert lm.backend.warmed == [WARM_UP] and steps[-1] == WARM_UP
    got = engine.logprobs(lm, [("The cat sat on the", " mat")], cache=False, progress=False)
    want = engine.logprobs(tiny_lm, [("The cat sat on the", " mat")], cache=False, progress=False)
    assert got[0].total == pytest.approx(want[0].total, abs=1e-6)
