"""Every notebook runs top to bottom in a copy of the repository with nothing beside it.

The copy holds the files git tracks (and the untracked ones it does not ignore): no ``../shared`` folder, no
``$SURFACELAB_DATA``, so the notebooks read only the data that comes with surfacelab (``data/eval``), as in a
user's fresh clone. ``surfacelab`` is imported from the copy (``PYTHONPATH``), so its data root is the copy's.
Each notebook runs under nbmake in its own pytest process (``make test`` runs no notebook anywhere else).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(p.name for p in (REPO / "notebooks").glob("*.ipynb"))
pytestmark = [pytest.mark.slow, pytest.mark.process]


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    """The repository's files in a fresh folder whose parent holds nothing else."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    dest = tmp_path_factory.mktemp("fresh") / "surfacelab"
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    assert not (dest.parent / "shared").exists() and sorted(os.listdir(dest.parent)) == ["surfacelab"]
    return dest


@pytest.fixture(scope="module")
def clone_env(clone) -> dict[str, str]:
    """This environment less ``$SURFACELAB_DATA``, importing ``surfacelab`` from the copy."""
    env = {k: v for k, v in os.environ.items() if k != "SURFACELAB_DATA"}
    env["PYTHONPATH"] = os.pathsep.join([str(clone), *filter(None, [env.get("PYTHONPATH")])])
    where = subprocess.run([sys.executable, "-c", "import surfacelab.tasks as t; print(t.default_data_root())"],
                           cwd=clone, env=env, check=True, capture_output=True, text=True).stdout.strip()
    assert where == str(clone / "data" / "eval"), where
    return env


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_runs_in_a_fresh_clone(clone, clone_env, name):
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbmake",
                          "--nbmake-timeout=300", str(clone / "notebooks" / name)],
                         cwd=clone, env=clone_env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"{name} failed in a fresh clone:\n{run.stdout[-6000:]}\n{run.stderr[-2000:]}"
    assert "1 passed" in run.stdout
