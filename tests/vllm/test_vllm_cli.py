"""``surfacelab score|eval --server URL``: the same tables through a vLLM server; a dead server is one line."""

from __future__ import annotations

import json

import pytest

from surfacelab.backends import vllm
from surfacelab.backends.vllm_server import free_port

from vllm_env import SERVED
from test_cli import run as _run

pytestmark = [pytest.mark.vllm, pytest.mark.slow]


def test_score_and_eval_through_the_server(vllm_server, api_key, capsys, monkeypatch, tmp_path, data_root):
    monkeypatch.setenv("SURFACELAB_API_KEY", api_key)
    monkeypatch.setenv("SURFACELAB_SERVER", vllm_server.url)  # the server the key is for
    monkeypatch.setattr(vllm, "PROBED", {})  # as a fresh command's process: no server probed (and warned of) yet
    argv = ["score", "--premise", "The man took a bath in the", "--option", " bathtub", "--option", " xylophone",
            "--domain", " the", "--model", SERVED]
    rc, out, err = _run(capsys, argv + ["--server", vllm_server.url, "--json", str(tmp_path / "remote.json")])
    assert rc == 0, err
    assert api_key not in out + err
    # a plain server's warning is one line of the command's own, with no Python source line
    warned = [line for line in err.splitlines() if "no token route" in line]
    assert warned and all(line.startswith("surfacelab score: warning: server ") for line in warned), err
    assert "UserWarning" not in err and ".py:" not in err, err
    rc, _, err = _run(capsys, argv + ["--json", str(tmp_path / "local.json")])
    assert rc == 0, err
    remote, local = (json.loads((tmp_path / f"{n}.json").read_text())["table"] for n in ("remote", "local"))
    assert [r["option"] for r in remote] == [" bathtub", " xylophone"]
    for a, b in zip(remote, local):
        assert a["dcpmi"] == pytest.approx(b["dcpmi"], abs=1e-3)
    rc, out, err = _run(capsys, ["eval", "--task", "copa", "--split", "val", "--limit", "4", "--data-dir",
                                 str(data_root), "--model", SERVED, "--server", vllm_server.url, "--no-progress",
                                 "--out", str(tmp_path / "items.csv")])
    assert rc == 0, err
    assert "copa/val" in out and (tmp_path / "items.csv").is_file()


def test_a_server_that_is_not_there_is_one_line(capsys, monkeypatch):
    monkeypatch.delenv("SURFACELAB_API_KEY", raising=False)
    url = f"http://127.0.0.1:{free_port()}/v1"
    rc, out, err = _run(capsys, ["score", "--premise", "a", "--option", " b", "--option", " c", "--server", url])
    assert rc == 2
    assert err.strip().count("\n") == 0 and "Traceback" not in err
    assert err.startswith(f"surfacelab score: error: server {url}: unreachable after 5 tries")
    rc, _, err = _run(capsys, ["score", "--premise", "a", "--option", " b", "--option", " c", "--server", url,
                               "--device", "cpu"])
    assert rc == 2 and "device/dtype: the server decides" in err
