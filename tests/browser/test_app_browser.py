"""Real browser: ``make app`` (as a user runs it) + headless Debian chromium, two visitors.

One server for the module, started as a teacher would (``make app``, a free port, its own token), and the
printed URL opened by two pages as two visitors: the page is the workbench with its prose, without code, prompts or
the notebook's technical cells; the URL without its token is refused; an edit updates the scorer table; the second
visitor gets a kernel of their own, an edit of theirs never reaches the first, and their kernel ends once they have
closed the page (the culling ``make app`` sets up) while the first visitor's stays. The same app scoring on a vLLM
server: ``tests/vllm/test_vllm_app.py``.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from labkit import (CHROMIUM, DIRECT, WATCH_JS, app_kernel, kernel_rss, launch, make_app, open_app, score_table,
                    timed_edit, wait_quiet)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]

#: Seconds a kernel with no page connected may stay idle (``make app APP_CULL_S=``; 600 by default).
CULL_S = 10


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    from pathlib import Path

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: apt-get install -y chromium")
    pytest.importorskip("playwright")
    pytest.importorskip("voila")
    from playwright.sync_api import sync_playwright

    with make_app(tmp_path_factory.mktemp("app"), APP_CULL_S=CULL_S) as running, sync_playwright() as p:
        browser, page, errors = launch(p, 1440, 900)
        seconds = open_app(page, running.url, log=running.log)
        yield {"app": running, "browser": browser, "page": page, "errors": errors, "open_s": seconds}
        browser.close()


def test_make_app_prints_a_url_with_a_token_that_opens_the_workbench(app):
    running, page = app["app"], app["page"]
    urls = [word for word in running.printed.split() if word.startswith("http")]
    assert urls == [running.url], running.printed  # bound to 127.0.0.1: one URL, no other address
    assert running.url == f"{running.base}/voila/render/00_workbench.ipynb?token={running.token}"
    assert "06_explore_a_dataset.ipynb" in running.printed  # the explorer is named beside it
    assert "bathtub" in score_table(page)["option"][0]
    # the prose that says what to do is there; code, prompts and the cells for the lab are not
    body = page.inner_text("body")
    assert "Options are read exactly as typed" in body
    for lab_only in ("Everything shown is also a DataFrame", "A model on a vLLM server", "What this shows"):
        assert lab_only not in body, lab_only
    code = ".jp-CodeCell .jp-InputArea, .jp-CodeCell .jp-InputPrompt, .jp-OutputPrompt, .highlight, .cm-editor"
    assert page.locator(code).count() == 0 and "In [" not in body
    assert "Workbench()" not in body and "wb.update()" not in body
    assert page.locator(".jp-Cell").count() == 2  # the introduction and the workbench
    stderr = " ".join(page.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts())
    assert stderr == "", stderr
    assert not [e for e in app["errors"] if "pageerror" in e], app["errors"]


def test_the_page_without_the_token_is_refused(app):
    # fetched without following the redirect to the login page: no kernel starts for it
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open(app["app"].url.split("?")[0], timeout=30)
    assert refused.value.code in (302, 403), refused.value
    assert DIRECT.open(app["app"].url.replace("00_workbench.ipynb", "").replace("/voila/render/", "/"),
                       timeout=30).status == 200  # with it, the notebook list answers


def test_an_edit_updates_the_scorer_table(app):
    page = app["page"]
    before = score_table(page)["LM"]
    timed_edit(page, "The man took a bath in the", " big")
    after = score_table(page)
    assert page.locator(".sl-premise textarea").input_value() == "The man took a bath in the big"
    assert after["LM"] != before and len(after["LM"]) == 4, (before, after)
    assert page.inner_text(".sl-status").startswith("updated")


def test_a_second_visitor_gets_a_kernel_of_their_own(app, tmp_path):
    first, browser = app["page"], app["browser"]
    first_kernel, first_table = app_kernel(first), score_table(first)
    first_premise = first.locator(".sl-premise textarea").input_value()
    assert kernel_rss(first_kernel), "no kernel process for the first visitor"
    second = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    open_app(second, app["app"].url, log=app["app"].log)
    assert app_kernel(second) != first_kernel and kernel_rss(app_kernel(second))
    # the second visitor starts from the notebook, not from the first visitor's edit
    assert second.locator(".sl-premise textarea").input_value() == "The man took a bath in the"
    timed_edit(second, "The woman took a bath in the", " cold")
    assert score_table(second)["LM"] != first_table["LM"]
    # nothing of it reached the first visitor's page
    first.evaluate(WATCH_JS)
    wait_quiet(first, 500, timeout_ms=30_000, changed=False)
    assert first.locator(".sl-premise textarea").input_value() == first_premise
    assert score_table(first) == first_table
    # the second visitor leaves: their kernel, idle with no page connected, is shut down after APP_CULL_S (closing
    # the page alone does not end it); the first visitor's, idle too but connected, stays
    second_kernel = app_kernel(second)
    second.close(run_before_unload=True)
    end = time.monotonic() + 4 * CULL_S + 60
    while kernel_rss(second_kernel) is not None and time.monotonic() < end:
        time.sleep(1)
    assert kernel_rss(second_kernel) is None, "the kernel of a closed page still runs"
    assert kernel_rss(first_kernel) and first.locator(".sl-view-scores.sl-view-ready").count() == 1
