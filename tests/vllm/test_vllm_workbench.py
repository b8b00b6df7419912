"""The Workbench on a real vLLM server: every view renders from the server's numbers; the URL is saved, the key
never."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ipywidgets.widgets import widget as ipy_widget

import surfacelab as sl
from surfacelab.widgets import VIEWS, Workbench
from surfacelab.widgets.workbench.updates import ViewState

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

PREMISE, DOMAIN = "The man took a bath in the", " the"
OPTIONS = [" bathtub", " sink", " pool", " xylophone"]


def test_workbench_on_a_vllm_server(vllm_server, api_key, real_lm, tmp_path):
    bench = Workbench(lm="smollm2-135m", server=vllm_server.url, api_key=api_key, live=False,
                      export_dir=tmp_path / "exports")
    try:
        assert bench.models.server_box.value == vllm_server.url and bench.lm.backend.url == vllm_server.url
        bench.premise_box.value, bench.domain_box.value = PREMISE, DOMAIN
        bench.set_options(OPTIONS, ["tub, bath tub", "basin", "swimming pool", ""], gold=0)
        bench.update()
        assert bench.message.value == ""
        assert {n: (v.state, v.message) for n, v in bench.views.items()} == {n: ("ready", "") for n in VIEWS}
        frames = bench.frames()
        assert set(frames) == set(VIEWS)
        # the numbers are the server's, and equal the in-process model's
        ref = sl.score(real_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, cache=False)
        np.testing.assert_allclose(frames["scores"]["logprob"], ref.table["logprob"], atol=1e-3)
        assert bench.lm.backend.has_entropy is False
        tokens = bench.views["tokens"]
        assert "entropy not available from this backend" in tokens.text.value and tokens.heatmap.has_entropy is False
        assert np.isnan(frames["tokens"]["entropy"]).all()
        for name in ("paraphrase", "letters", "pll"):
            assert bench.views[name].plot.figure["data"], name
        # the saved state names the server, never the key; no widget synced to the browser holds the key
        path = bench.save_state(tmp_path / "state.json")
        assert json.loads(path.read_text())["server"] == vllm_server.url and api_key not in path.read_text()
        for widget in list(ipy_widget.Widget.widgets.values()):
            assert api_key not in json.dumps(widget.get_state(), default=str)
        # an unreachable URL: one message, the server model stays and still answers edits
        server_lm = bench.lm
        bench.models.server_box.value = "http://127.0.0.1:9/v1"
        bench.update()
        assert "could not be loaded" in bench.message.value and "127.0.0.1:9" in bench.message.value
        assert bench.lm is server_lm and all(v.state == ViewState.READY for v in bench.views.values())
    finally:
        bench.close()
