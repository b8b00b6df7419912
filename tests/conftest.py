"""Shared fixtures: tiny in-memory models for unit tests, the packaged real models for integration tests."""

from __future__ import annotations

import os
import tracemalloc

import pytest

from tiny_models import tiny_causal, tiny_masked

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Score caches go to a per-session temp dir; converted model copies stay in the user's cache."""
    from surfacelab import engine
    from surfacelab.engine import cache

    path = tmp_path_factory.getbasetemp() / "scores.sqlite"
    monkeypatch.setattr(engine, "default_cache", lambda: cache.ScoreCache(path))


@pytest.fixture(scope="session")
def tiny_lm():
    """A 2-layer random GPT-2 with a byte-level BPE tokenizer (no BOS added; window 64)."""
    from surfacelab import load_lm

    return load_lm(tiny_causal(), device="cpu")


@pytest.fixture(scope="session")
def tiny_mlm():
    """A 2-layer random BERT with a WordPiece tokenizer."""
    from surfacelab import load_mlm

    return load_mlm(tiny_masked(), device="cpu")


@pytest.fixture(scope="session")
def real_lm():
    """The packaged smollm2-135m."""
    from surfacelab import load_lm

    return load_lm("smollm2-135m", device="cpu")


@pytest.fixture(scope="session")
def real_mlm():
    """The packaged splade-tiny (retrieval-tuned MLM head)."""
    from surfacelab import load_mlm

    return load_mlm("splade-tiny", device="cpu")


@pytest.fixture
def peak_bytes():
    """``peak_bytes(call)``: the most memory Python held while ``call()`` ran (tracemalloc, every thread)."""
    def measure(call) -> int:
        tracemalloc.start()
        try:
            call()
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        return peak
    return measure
