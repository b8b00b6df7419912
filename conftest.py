"""Doctests of the package (``pytest --doctest-modules surfacelab``) run on the tiny in-memory models.

Every docstring example sees ``sl`` (the package), ``lm`` (a 2-layer random GPT-2 with a real BPE
tokenizer) and ``mlm`` (a 2-layer random BERT with a WordPiece tokenizer); their scores mean nothing,
so examples show shapes, columns and rules rather than numbers. Score caches go to a temp dir.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# `python -m surfacelab.cli` runs the CLI when imported: not a module to collect doctests from. tests/logs holds
# framework logs and the scripts that made them, run by the frameworks' own interpreters (lighteval is not in .venv).
collect_ignore = ["surfacelab/cli/__main__.py", "tests/logs"]


def _tiny_models():
    path = Path(__file__).parent / "tests" / "tiny_models.py"
    spec = importlib.util.spec_from_file_location("_doctest_tiny_models", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def _doctest_models(tmp_path_factory):
    import surfacelab as sl

    tiny = _tiny_models()
    return {"sl": sl, "lm": sl.load_lm(tiny.tiny_causal(), device="cpu"),
            "mlm": sl.load_mlm(tiny.tiny_masked(), device="cpu")}


@pytest.fixture(autouse=True)
def _doctest_setup(request, monkeypatch, tmp_path_factory):
    """For doctest items only: the tiny models in the namespace and an isolated score cache."""
    if not isinstance(request.node, DoctestItem):
        return
    from surfacelab import engine
    from surfacelab.engine import cache

    path = tmp_path_factory.getbasetemp() / "doctest-scores.sqlite"
    monkeypatch.setattr(engine, "default_cache", lambda: cache.ScoreCache(path))
    request.getfixturevalue("doctest_namespace").update(request.getfixturevalue("_doctest_models"))


def pytest_collection_modifyitems(config, items) -> None:
    """The browser tests run last: they drive a whole JupyterLab + Chromium, the part most likely to be slow on a
    loaded machine, so every other result is already on record if they fail or are cut short."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)  # stable: file order otherwise
