"""A lesson page in headless Debian chromium, from a file:// URL with the network blocked (every http(s) request is
recorded and refused, and no host name resolves): it opens and draws an item's views (timed from navigation start),
shows the premise as typed (markup in it stays text, no script of it runs), the token heatmap's tooltip on hover, a
folded answer that opens on a click, and the next item. Tiny in-memory models build the page."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import surfacelab as sl
from labkit import offline_browser, offline_page

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
browser = pytest.fixture(scope="module", name="browser")(offline_browser)
page = pytest.fixture(name="page")(offline_page)

#: The bound the test asserts on a shared CI machine; the target (2 s, docs/lesson.md) is what the report measures.
OPEN_BOUND_S = 10.0
EVIL = "The man <img src=x onerror=alert(1)> took a bath in the </script><script>alert(2)</script>"
ITEMS = [
    {"premise": EVIL, "domain_premise": " the", "options": [" bathtub", " <b>soap</b>", " milk"],
     "paraphrases": ["tub, bath tub", "", ""], "gold": 0},
    {"premise": "A cat sat on the", "domain_premise": " the", "options": [" mat", " dog"], "gold": 0},
]
SHOWN = "section:not([hidden])"


@pytest.fixture(scope="module")
def lesson_file(tiny_lm, tiny_mlm, tmp_path_factory) -> Path:
    return sl.lesson(ITEMS, tmp_path_factory.mktemp("lesson") / "lesson.html", lm=tiny_lm, mlm=tiny_mlm,
                     lesson_text=True, progress=False)


def drawn(page, pid: str, timeout_ms: int = 60_000) -> float:
    """Wait until page ``pid`` of the lesson has every figure drawn; the milliseconds from navigation start."""
    page.wait_for_function("(pid) => window.slLesson && window.slLesson.drawn[pid] !== undefined", arg=pid,
                           timeout=timeout_ms)
    return page.evaluate("(pid) => window.slLesson.drawn[pid]", pid)


def test_an_item_opens_offline_with_its_views_drawn(page, lesson_file):
    page.goto(lesson_file.as_uri() + "#item-1")
    ms = drawn(page, "item-1")
    shown_ms = page.evaluate("window.slLesson.shown['item-1']")
    print(f"\nlesson opened from file://: text and heatmaps in {shown_ms:.0f} ms, every figure in {ms:.0f} ms "
          f"({lesson_file.stat().st_size / 1e6:.1f} MB)")
    assert ms < OPEN_BOUND_S * 1000
    assert page.locator(f"{SHOWN} .sl-lesson-premise").inner_text() == EVIL  # shown as typed
    views = page.locator(f"{SHOWN} .sl-view").evaluate_all("els => els.map(e => e.dataset.view)")
    assert views == ["scores", "tokens", "paraphrase", "letters", "pll", "why"]
    plots = page.locator(f"{SHOWN} .sl-lesson-plot")
    assert plots.count() >= 3 and plots.evaluate_all("els => els.every(e => e.querySelector('.main-svg'))")
    assert page.locator(f"{SHOWN} img").count() == 0 and page.locator(f"{SHOWN} .sl-lesson-options b").count() == 0
    assert page.seen == {"requests": [], "errors": [], "dialogs": []}


def test_hover_a_token_for_its_rank_entropy_and_alternatives(page, lesson_file):
    page.goto(lesson_file.as_uri() + "#item-1")
    drawn(page, "item-1")
    token = page.locator(f"{SHOWN} .sl-view-tokens .sl-tok").first
    token.scroll_into_view_if_needed()
    token.hover()
    tip = page.locator(".sl-heatmap-tip").first
    tip.wait_for(state="visible", timeout=5000)
    text = tip.inner_text()
    assert "rank" in text and "entropy" in text and "log-prob" in text and "top alternatives" in text
    box, view = tip.bounding_box(), page.viewport_size
    assert 0 <= box["x"] and box["x"] + box["width"] <= view["width"]  # kept inside the window
    assert page.seen["errors"] == [] and page.seen["requests"] == []


def test_next_item_and_a_folded_answer(page, lesson_file):
    page.goto(lesson_file.as_uri())  # the lesson text first
    drawn(page, "lesson")
    answer = page.locator(f"{SHOWN} details.sl-answer").first
    assert not answer.evaluate("d => d.open") and not answer.locator("pre.sl-code").is_visible()
    answer.locator("summary").click()
    assert answer.evaluate("d => d.open") and answer.locator("pre.sl-code").is_visible()
    page.locator(".sl-lesson-nav a[data-page='item-1']").click()
    drawn(page, "item-1")
    start = time.monotonic()
    page.locator(f"{SHOWN} a.sl-next").click()
    drawn(page, "item-2")
    print(f"\nnext item drawn in {time.monotonic() - start:.2f} s (click to every figure drawn)")
    assert page.locator(f"{SHOWN} .sl-lesson-premise").inner_text() == ITEMS[1]["premise"]
    assert page.evaluate("location.hash") == "#item-2"
    assert page.locator(".sl-lesson-nav a.sl-current").get_attribute("data-page") == "item-2"
    assert page.locator(f"{SHOWN} .sl-next").get_attribute("class") == "sl-next sl-disabled"  # the last item
    assert page.seen == {"requests": [], "errors": [], "dialogs": []}
