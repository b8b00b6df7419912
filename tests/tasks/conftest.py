"""Shared fixtures for the task-registry tests: the shipped evaluation data, and the data surfacelab may not ship."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import surfacelab.tasks as tasks

REPO = Path(__file__).resolve().parents[2]
#: tasks whose files surfacelab does not ship (their licences do not allow it)
UNSHIPPED = tuple(name for name, spec in tasks.SPECS.items() if spec.obtain)


def _unshipped_root() -> Path | None:
    """A data root holding StoryCloze and AG News: $SURFACELAB_DATA, or a ../shared/data beside the checkout
    (or beside a folder of worktrees) where a lab keeps them."""
    env = os.environ.get("SURFACELAB_DATA")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data", REPO.parents[1] / "shared" / "data"]:
        if all((cand / name).is_dir() for name in UNSHIPPED):
            return cand
    return None


@pytest.fixture(scope="session")
def data_root() -> Path:
    """The data that comes with surfacelab (data/eval)."""
    assert tasks.DATA_DIR.is_dir(), f"{tasks.DATA_DIR} is missing: the evaluation data is part of the repository"
    return tasks.DATA_DIR


@pytest.fixture(scope="session")
def unshipped_root() -> Path:
    """A data root with the datasets surfacelab does not ship; skipped where the machine has none."""
    root = _unshipped_root()
    if root is None:
        pytest.skip(f"{', '.join(UNSHIPPED)} are not shipped (licences); set SURFACELAB_DATA to a folder with them")
    return root


def _by_line(task, line: int):
    found = [it for it in task if it.meta["line"] == line]
    assert len(found) == 1, f"no single item from line {line}"
    return found[0]


@pytest.fixture
def by_line():
    """``by_line(task, n)``: the item read from 1-based line ``n`` of the task's file."""
    return _by_line
