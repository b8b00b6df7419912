"""Shared fixtures for the task-registry tests: the real data root (skip if absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _data_root() -> Path | None:
    env = os.environ.get("SURFACELAB_DATA")
    # ../shared/data beside the checkout, or beside the folder of worktrees (a checkout at <root>/wt/<name>)
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data", REPO.parents[1] / "shared" / "data"]:
        if (cand / "copa" / "val.jsonl").is_file():
            return cand
    return None


@pytest.fixture(scope="session")
def data_root() -> Path:
    root = _data_root()
    if root is None:
        pytest.skip("real evaluation data not found: set SURFACELAB_DATA or put ../shared/data beside the checkout")
    return root


def _by_line(task, line: int):
    found = [it for it in task if it.meta["line"] == line]
    assert len(found) == 1, f"no single item from line {line}"
    return found[0]


@pytest.fixture
def by_line():
    """``by_line(task, n)``: the item read from 1-based line ``n`` of the task's file."""
    return _by_line
