"""Fixtures of the widget tests."""

from __future__ import annotations

import pytest

from tiny_models import tiny_causal


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny causal model saved as a folder: a model name a state file or the LM picker can carry."""
    folder = tmp_path_factory.mktemp("tiny") / "tiny-lm"
    model, tokenizer = tiny_causal()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
