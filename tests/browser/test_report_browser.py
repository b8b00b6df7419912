"""A run report in headless Debian chromium, from a file:// URL with the network blocked (every http(s) request is
recorded and refused, and no host name resolves): it opens with its flipped items and the item table's first page
drawn, markup in the run's text stays text (no script of it runs), the search and a label filter narrow the table, a
header click sorts it, a row click opens the item with its verdict in words, and the pager moves on. A tiny in-memory
model makes the run."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import surfacelab as sl
from labkit import offline_browser, offline_page
from surfacelab import tasks
from surfacelab.tasks import Item, Task

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
browser = pytest.fixture(scope="module", name="browser")(offline_browser)
page = pytest.fixture(name="page")(offline_page)

EVIL = "A man <img src=x onerror=alert(1)> took a </script><script>alert(2)</script> bath in the"
#: Items of the run: more than one page (100 rows) of the item table.
N_ITEMS = 130


@pytest.fixture(scope="module")
def run(tiny_lm):
    base = tasks.load("copa", "val")
    items = [Item(f"{it.id}{'' if k < len(base.items) else '-again'}", it.premise, it.options, it.gold,
                  it.domain_premise) for k, it in enumerate((base.items * 2)[:N_ITEMS])]
    items[0] = Item("evil-0", EVIL, [" bathtub", " <b>soap</b>"], 0, " the")
    return sl.evaluate(tiny_lm, Task("constructed", "val", items, base.template, "memory"), ["lm", "dcpmi"],
                       progress=False, n_boot=100)


@pytest.fixture(scope="module")
def report_file(run, tmp_path_factory) -> Path:
    return sl.report(run, tmp_path_factory.mktemp("report") / "report.html")


def rows(page) -> list[str]:
    """The item table's shown rows: their id cells."""
    return page.eval_on_selector_all("#sl-r-items tbody tr[data-item]", "rs => rs.map(r => r.children[1].textContent)")


def test_the_report_opens_offline_and_its_table_answers(page, run, report_file):
    t0 = time.perf_counter()
    page.goto(report_file.as_uri())
    page.wait_for_selector("#sl-r-items tbody tr[data-item]")
    opened = time.perf_counter() - t0
    print(f"\nreport of {N_ITEMS} items ({report_file.stat().st_size / 1e3:.0f} kB) drawn in {opened * 1000:.0f} ms")
    assert page.seen == {"requests": [], "errors": [], "dialogs": []}
    assert page.evaluate("document.querySelectorAll('img, #sl-r-items b').length") == 0  # the run's markup: text
    ids = run.items["id"].astype(str).tolist()
    assert rows(page) == ids[:100]
    assert page.inner_text("#sl-r-items .sl-r-count") == f"{N_ITEMS} of {N_ITEMS} items"
    flipped = run.items[run.items["correct_lm"] != run.items["correct_dcpmi"]]
    assert page.locator("#sl-r-flipped .sl-r-item").count() == min(25, len(flipped)) > 0
    first = page.locator("#sl-r-flipped .sl-r-item").first.inner_text()
    assert f"item {flipped['id'].iloc[0]}" in first and f"Verdict: {flipped['why'].iloc[0]} — " in first

    page.click("#sl-r-items .sl-r-pager >> nth=0 >> text=next →")
    assert rows(page) == ids[100:]
    page.fill("#sl-r-items .sl-r-search", "onerror")  # the evil premise, found as text
    page.wait_for_function("document.querySelector('#sl-r-items .sl-r-count').textContent.startsWith('1 of')")
    assert rows(page) == ["evil-0"]
    page.click("#sl-r-items tbody tr[data-item]")
    detail = page.inner_text("#sl-r-items .sl-r-detail")
    assert EVIL in detail and "<b>soap</b>" in detail and "★ ␣bathtub" in detail
    assert page.evaluate("[...document.querySelectorAll('img, .sl-r-detail *')].filter(e => e.tagName === 'IMG' "
                         "|| e.textContent === 'soap').length") == 0  # no element made of the option's markup

    page.fill("#sl-r-items .sl-r-search", "")
    label = run.items["why"].value_counts().index[0]
    page.select_option("#sl-r-items select >> nth=0", label)
    expect = run.items.loc[run.items["why"] == label, "id"].astype(str).tolist()
    assert rows(page) == expect[:100]
    page.click("#sl-r-items th >> text=margin")  # sort by the LM margin, smallest first
    margins = run.items.set_index(run.items["id"].astype(str)).loc[rows(page), "gap_lm"].round(3).tolist()
    assert margins == sorted(margins)
    assert page.seen == {"requests": [], "errors": [], "dialogs": []}
