"""A real vLLM server for the ``vllm`` tests, started once per session and always stopped.

The server runs from the vLLM environment (``make vllm`` creates ``.vllm-venv``; ``VLLM_PYTHON``
points at another interpreter). Without it the tests are skipped, unless ``SURFACELAB_REQUIRE_VLLM``
is set (``make test`` sets it), which turns the skip into a failure.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest

from test_evaluate import data_root  # noqa: F401 - the real evaluation data, or a skip

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
    from surfacelab.models import PRESETS, cache_dir

    return PRESETS[SERVED].locate(cache_dir())


@pytest.fixture(scope="session")
def vllm_server(tmp_path_factory):
    """The default model served by vLLM (fp32, CPU) behind a random API key, for the whole session."""
    from surfacelab.backends.vllm import LocalServer

    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = LocalServer(model_dir(), python=vllm_python(), api_key=secrets.token_hex(16), served_model_name=SERVED,
                         log_path=log)
    with server:
        yield server


@pytest.fixture(scope="session")
def api_key(vllm_server):
    """The session server's API key."""
    return vllm_server._key.value


@pytest.fixture(scope="session")
def remote_lm(vllm_server, api_key):
    """``smollm2-135m`` scored through the session's server."""
    import surfacelab as sl

    return sl.load_lm(SERVED, server=vllm_server.url, api_key=api_key)

