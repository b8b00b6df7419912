"""Real vLLM servers for the ``vllm`` tests, started once per session and always stopped.

The servers run from the vLLM environment (``make vllm`` creates ``.vllm-venv``; ``VLLM_PYTHON``
points at another interpreter). Without it the tests are skipped, unless ``SURFACELAB_REQUIRE_VLLM``
is set (``make test`` sets it), which turns the skip into a failure.

Three servers: the default model behind an API key (``vllm_server``), the same model with other
weights under the same name (``other_weights_server``), both plain, and the default model served with the flags
that open vLLM's token route and its cached-token counts, with 32-token cache blocks (``prefix_server``). Starting
one takes tens of seconds (mostly imports), so the servers the selected tests need start together.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from test_evaluate import data_root  # noqa: F401 - the real evaluation data, or a skip
from surfacelab.backends.vllm_tokens import FLAGS
from vllm_env import SERVED, model_dir, vllm_python

def _other_weights(folder: Path) -> Path:
    """The default model with its final norm scaled by 1.1 (sharper next-token distributions) in ``folder``."""
    import shutil

    from safetensors.torch import load_file, save_file

    src = model_dir()
    for f in src.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy(f, folder / f.name)
    weights = load_file(src / "model.safetensors")
    weights["model.norm.weight"] = weights["model.norm.weight"] * 1.1
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="session")
def _servers(request, tmp_path_factory):
    """Launch (without waiting) every server the selected tests use; stop them all at the end."""
    from surfacelab.backends.vllm_server import LocalServer

    python, wanted = vllm_python(), {"vllm_server", "other_weights_server", "prefix_server"}
    used = {name for item in request.session.items for name in getattr(item, "fixturenames", ()) if name in wanted}
    root = tmp_path_factory.mktemp("vllm")
    servers = {}
    if "vllm_server" in used:
        servers["vllm_server"] = LocalServer(model_dir(), python=python, api_key=secrets.token_hex(16),
                                             served_model_name=SERVED, log_path=root / "server.log").start()
    if "other_weights_server" in used:
        folder = _other_weights(tmp_path_factory.mktemp("other-weights"))
        servers["other_weights_server"] = LocalServer(folder, python=python, served_model_name=SERVED,
                                                      log_path=folder / "server.log").start()
    if "prefix_server" in used:
        servers["prefix_server"] = LocalServer(model_dir(), python=python, served_model_name=SERVED,
                                               args=[*FLAGS.split(), "--block-size", "32"],
                                               log_path=root / "prefix-server.log").start()
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def _ready(servers: dict, name: str):
    server = servers[name]
    server.wait()
    return server


@pytest.fixture(scope="session")
def vllm_server(_servers):
    """The default model served by vLLM (fp32, CPU) behind a random API key."""
    return _ready(_servers, "vllm_server")


@pytest.fixture(scope="session")
def other_weights_server(_servers):
    """The same model with other weights (final norm x 1.1) under the same served name; no API key."""
    return _ready(_servers, "other_weights_server")


@pytest.fixture(scope="session")
def prefix_server(_servers):
    """The default model served with vLLM's token route and cached-token counts (``vllm_tokens.FLAGS``) and
    32-token cache blocks; no API key."""
    return _ready(_servers, "prefix_server")


@pytest.fixture(scope="session")
def api_key(vllm_server):
    """The session server's API key."""
    return vllm_server._key.value


@pytest.fixture(scope="session")
def remote_lm(vllm_server, api_key):
    """``smollm2-135m`` scored through the session's server."""
    import surfacelab as sl

    return sl.load_lm(SERVED, server=vllm_server.url, api_key=api_key)
