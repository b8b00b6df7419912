"""Real-browser test: JupyterLab + headless Debian chromium run 00_workbench, edit the premise, check every view.

Needs /usr/bin/chromium (``apt-get install -y chromium``) and the ``playwright`` pip package (no
browser download: the Debian chromium is launched through ``executable_path``). Saves the
screenshot the README shows to ``docs/workbench.png``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-quic"]
VIEWS = ["scores", "tokens", "paraphrase", "letters", "pll"]
NEW_PREMISE = "After the long hike she soaked her feet in the"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: apt-get install -y chromium")
    pytest.importorskip("playwright")
    tmp = tmp_path_factory.mktemp("lab")
    news = tmp / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false", "checkForUpdates": false}')  # no "get notified about news?" toast
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"))
    jupyter = shutil.which("jupyter", path=str(Path(sys.executable).parent)) or "jupyter"
    log = open(tmp / "lab.log", "w")
    proc = subprocess.Popen([jupyter, "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                             f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
                             "--allow-root"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"jupyter lab exited: {(tmp / 'lab.log').read_text()[-2000:]}")
                time.sleep(0.2)
        else:
            pytest.fail("jupyter lab did not answer within 60 s")
        yield base, token
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _scores_text(page) -> str:
    return page.text_content(".sl-view-scores .sl-view-content") or ""


def test_workbench_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token = lab
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, chromium_sandbox=False, args=FLAGS)
        page = browser.new_page(viewport={"width": 1720, "height": 2400})
        page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
        page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
        page.goto(f"{base}/lab/tree/notebooks/00_workbench.ipynb?reset&token={token}")
        page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=90_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'], "
                               ".jp-Toolbar-kernelStatus", timeout=90_000)
        page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
        page.wait_for_function("(() => { const k = window.jupyterapp.shell.currentWidget?.sessionContext?.session"
                               "?.kernel; return k && k.status === 'idle'; })()", timeout=90_000)
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        for view in VIEWS:
            page.wait_for_selector(f".sl-view-{view}.sl-view-ready", timeout=180_000)
        page.wait_for_selector(".sl-view-scores .sl-score-table table", timeout=60_000)
        page.wait_for_selector(".sl-view-paraphrase .js-plotly-plot", timeout=60_000)
        page.wait_for_selector(".sl-token-heatmap .sl-tok", timeout=60_000)
        before = _scores_text(page)
        page.screenshot(path=str(tmp_path / "before.png"))
        print("debug screenshots in", tmp_path)
        assert "bathtub" in before, before

        box = page.locator(".sl-premise textarea")
        box.click()
        box.fill("")
        box.type(NEW_PREMISE, delay=5)
        page.wait_for_function(
            "(prev) => { const el = document.querySelector('.sl-view-scores .sl-view-content');"
            " return el && el.textContent !== prev && el.querySelector('table'); }",
            arg=before, timeout=120_000)
        page.wait_for_function("document.querySelector('.sl-status')?.innerText.startsWith('updated')",
                               timeout=120_000)
        after = _scores_text(page)
        assert after != before
        for view in VIEWS:
            assert page.locator(f".sl-view-{view}.sl-view-ready").count() == 1, view
        assert page.locator(".sl-view-error").count() == 0
        stderr = " ".join(page.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts())
        assert "Warning" not in stderr and "Traceback" not in stderr, stderr
        assert page.locator(".sl-message .sl-error").count() == 0
        # the PLL view always carries the masked LM's label
        assert "retrieval" in page.inner_text(".sl-view-pll")
        # hover a token: the tooltip shows rank, entropy and the top alternatives
        page.locator(".sl-token-heatmap .sl-tok").first.hover()
        tip = page.inner_text(".sl-heatmap-tip")
        assert "rank" in tip and "entropy" in tip and "top alternatives" in tip
        page.mouse.move(5, 5)
        time.sleep(0.5)
        shot = REPO / "docs" / "workbench.png"
        shot.parent.mkdir(exist_ok=True)
        page.locator(".sl-workbench").screenshot(path=str(shot))
        browser.close()
    assert not errors, errors
