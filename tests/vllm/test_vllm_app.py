"""``make app SERVER=...`` in a real browser: the visitor's workbench scores its causal LM on that vLLM server (given
to the kernels as ``$SURFACELAB_SERVER``; the server's API key, from ``$SURFACELAB_API_KEY``, goes to it and never to
the page). The app without a server: ``tests/browser/test_app_browser.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import surfacelab as sl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
import labkit  # noqa: E402

pytestmark = [pytest.mark.vllm, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


def test_make_app_with_a_server_scores_every_visitor_there(vllm_server, api_key, remote_lm, tmp_path):
    if not Path(labkit.CHROMIUM).exists():
        pytest.skip(f"{labkit.CHROMIUM} missing: apt-get install -y chromium")
    pytest.importorskip("voila")
    from playwright.sync_api import sync_playwright

    # the server refuses a request without its key: the page is drawn only if the key reached it
    with labkit.make_app(tmp_path, env={"SURFACELAB_API_KEY": api_key}, SERVER=vllm_server.url) as app, \
            sync_playwright() as p:
        assert f"causal LM on {vllm_server.url}" in app.printed and api_key not in app.printed
        browser, page, _ = labkit.launch(p, 1440, 900)
        labkit.open_app(page, app.url, log=app.log)
        assert page.locator(".sl-server input").input_value() == vllm_server.url
        assert "entropy not available" in page.inner_text(".sl-view-tokens")  # the server's numbers: no entropy
        table = labkit.score_table(page)
        ref = sl.score(remote_lm, "The man took a bath in the", [" bathtub", " sink", " pool", " xylophone"],
                       domain_premise=" the", cache=False)
        # the page shows 3 decimals; the server's float sums may differ in the last bits between two batches
        assert [float(v) for v in table["LM"]] == pytest.approx(list(ref.table["logprob"]), abs=2e-3), table
        assert api_key not in page.content()
        browser.close()
