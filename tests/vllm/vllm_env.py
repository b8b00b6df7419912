"""Where the ``vllm`` tests find vLLM and the model its servers serve (a module of its own: every test folder has a
``conftest``, so ``from conftest import`` would find whichever was imported last)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVED = "smollm2-135m"


def vllm_python() -> str:
    """The interpreter vLLM is installed in; skips (or fails under ``SURFACELAB_REQUIRE_VLLM``) without one."""
    python = os.environ.get("VLLM_PYTHON") or str(ROOT / ".vllm-venv" / "bin" / "python")
    if not os.access(python, os.X_OK):
        msg = f"no vLLM environment at {python}: run `make vllm` or set VLLM_PYTHON"
        if os.environ.get("SURFACELAB_REQUIRE_VLLM"):
            pytest.fail(msg)
        pytest.skip(msg)
    return python


def model_dir() -> Path:
    """The plain safetensors copy of the default model (converted on first use)."""
    from surfacelab.models import PRESETS
    from surfacelab.paths import cache_dir

    return PRESETS[SERVED].locate(cache_dir())
