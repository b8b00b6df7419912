"""Real browser: ``make lab`` (as a user runs it) + headless Debian chromium on the workbench notebook.

One server and one page for the module (opening the notebook loads the models once); the tests run in
file order on that page: the printed URL opens the workbench, every view renders, the token tooltip
stays inside the viewport, the leading-space marker and its fix, an option's line break kept through an edit of its
box, the stale/busy classes while
computing, the chat template box (the rendered turns shown and scored), the timed edit (the views in sight, then
those out of sight in the background; logged, the
≤ 1 s target lives in ``benchmarks/bench_workbench_browser.py``),
the first screen at 1440 x 900 with and without the file browser (the premise and the first two views in sight), a
warning that moves no view, Why's premise label on one line, the server box's whole placeholder, "where the time
went" with the browser's drawing, the layout at 1280 / 1440 / 1920 px with and without the file browser and in the
dark theme, and a clean checkout afterwards.
"""

from __future__ import annotations

import re
import time

import pytest

from labkit import (VIEWS, WATCH_JS, git_status, kernel, kernel_json, lab_page, no_horizontal_scroll, open_workbench,
                    overlapping_text, page_state, timed_edit, wait_quiet, wait_redrawn, watch_redraw, wrapped_labels)

# the module shares one server and page; the first test also opens them (about a minute here)
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

#: The bound the browser test asserts on a shared CI machine; the target (1 s) is the benchmark's.
EDIT_BOUND_S = 5.0


def settle(page) -> None:
    """Wait until the workbench's DOM has been quiet for 0.5 s (a figure redrawn for a new width, theme or sight
    changes it after the event that caused it, and a check made meanwhile reads a half-drawn view)."""
    time.sleep(0.2)  # the resize observers and sight probes fire after the layout change
    page.evaluate(WATCH_JS)
    wait_quiet(page, 500, timeout_ms=30_000, changed=False)


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    before = git_status()
    tmp = tmp_path_factory.mktemp("lab")
    with lab_page(tmp) as (lab, page, errors):
        open_workbench(page, lab.url, log=lab.log)
        yield {"lab": lab, "page": page, "errors": errors, "git_before": before, "tmp": tmp}


def test_after_run_all_the_workbench_is_in_view(session):
    # run all leaves JupyterLab at the last cell; the workbench brings its top back into view once the run is over
    # (the first test: the others scroll)
    page = session["page"]
    page.wait_for_function("(() => { const r = document.querySelector('.sl-workbench').getBoundingClientRect();"
                           " return r.top >= 0 && r.top < window.innerHeight / 2; })()", timeout=10_000)
    assert page.locator(".sl-premise textarea").is_visible()


def test_make_lab_prints_one_url_that_opens_the_workbench(session):
    lab, page = session["lab"], session["page"]
    urls = [line for line in lab.printed.split() if line.startswith("http")]
    assert urls == [lab.url], lab.printed  # one URL, and it is the one that was opened
    assert "/lab/tree/00_workbench.ipynb?token=" in lab.url
    assert page.url.split("?")[0] == lab.url.split("?")[0]  # no login page, no "could not find path"
    for view in VIEWS:
        assert page.locator(f".sl-view-{view}.sl-view-ready").count() == 1, view
    assert "bathtub" in page.inner_text(".sl-view-scores .sl-score-table")
    page.locator(".sl-view-paraphrase").scroll_into_view_if_needed()  # figures out of sight are drawn lazily
    page.wait_for_selector(".sl-view-paraphrase .sl-plot .main-svg", timeout=30_000)
    assert "retrieval" in page.inner_text(".sl-view-pll")  # the PLL view always carries the model's label
    assert "the prompt the model reads" in page.inner_text(".sl-view-letters")
    stderr = " ".join(page.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts())
    assert "Traceback" not in stderr, stderr
    assert "Loading weights" not in stderr  # transformers' bars for the presets' converted copies
    assert "Jupyter news" not in page.inner_text("body")  # no news prompt over the workbench's corner


def test_token_tooltip_stays_inside_the_viewport(session):
    page = session["page"]
    assert page.locator(".sl-view-tokens .sl-heatmap-legend").count() == 1  # the colour legend
    toks = page.locator(".sl-view-tokens .sl-tok")
    for tok in (toks.last, toks.nth(toks.count() // 2), toks.first):  # the last one sits at the bottom right
        tok.scroll_into_view_if_needed()
        tok.hover()
        tip = page.locator(".sl-heatmap-tip >> visible=true")
        tip.wait_for(state="visible")
        box = tip.bounding_box()
        view = page.viewport_size
        assert box["x"] >= 0 and box["y"] >= 0, box
        assert box["x"] + box["width"] <= view["width"] and box["y"] + box["height"] <= view["height"], (box, view)
        text = tip.inner_text()
        assert "rank" in text and "entropy" in text and "top alternatives" in text
    page.mouse.move(2, 2)


def test_why_view_renders_and_follows_its_picker(session):
    page = session["page"]
    page.locator(".sl-view-why").scroll_into_view_if_needed()
    page.wait_for_selector(".sl-view-why.sl-view-ready .sl-why-gap .main-svg", timeout=60_000)
    page.locator(".sl-view-why .sl-why-competitors").scroll_into_view_if_needed()  # plots draw when in sight
    page.wait_for_selector(".sl-view-why .sl-why-competitors .trace.bars", timeout=30_000)  # the competitors bar
    page.locator(".sl-view-why .sl-why-gap").scroll_into_view_if_needed()
    layers = page.evaluate("[...document.querySelectorAll('.sl-view-why .sl-why-gap g[class$=layer]')]"
                           ".map(g => g.getAttribute('class') + ':' + g.querySelectorAll('path').length)")
    assert any(x.startswith("waterfalllayer") and int(x.split(":")[1]) >= 4 for x in layers), layers  # the gap
    assert "Verdict" in page.inner_text(".sl-view-why .sl-why-verdict")
    assert "support for the gold" in page.inner_text(".sl-view-why .sl-heatmap-legend")
    words = page.locator(".sl-view-why .sl-why-premise .sl-tok:not(.sl-tok-gap)")
    premise = page.locator(".sl-premise textarea").input_value()
    assert words.count() == len(premise.split())
    colours = page.evaluate("[...document.querySelectorAll('.sl-view-why .sl-tok:not(.sl-tok-gap)')]"
                            ".map(e => getComputedStyle(e).backgroundColor)")
    assert any(c not in ("rgba(0, 0, 0, 0)", "transparent") for c in colours), colours
    word = words.nth(words.count() // 2)
    word.scroll_into_view_if_needed()
    word.hover()
    tip = page.locator(".sl-heatmap-tip >> visible=true")
    tip.wait_for(state="visible")
    text, box, view = tip.inner_text(), tip.bounding_box(), page.viewport_size
    assert "LM margin" in text and "DC-PMI margin" in text and "replaced by" in text, text
    assert 0 <= box["x"] and box["x"] + box["width"] <= view["width"], (box, view)
    page.mouse.move(2, 2)
    # compare with the last option: the view recomputes against it, showing its first part (verdict, gap) marked
    # busy with a visible cue while the premise occlusion computes, then the premise map
    page.evaluate("""() => {
      const view = document.querySelector('.sl-view-why');
      window.__slFirstPart = false;
      const obs = new MutationObserver(() => {
        const cue = view.querySelector('.sl-view-cue')?.innerText || '';
        const verdict = view.querySelector('.sl-why-verdict')?.innerText || '';
        const words = view.querySelectorAll('.sl-why-premise .sl-tok').length;
        if (view.classList.contains('sl-busy') && cue.includes('first part shown') && verdict.includes('Verdict')
            && words === 0) { window.__slFirstPart = true; obs.disconnect(); }
      });
      obs.observe(view, {subtree: true, childList: true, attributes: true, characterData: true});
    }""")
    page.locator(".sl-view-why .sl-why-against select").select_option(index=3)
    page.wait_for_function("document.querySelector('.sl-view-why .sl-why-premise .sl-heatmap-label')"
                           "?.textContent.includes('xylophone')", timeout=60_000)
    page.wait_for_selector(".sl-view-why.sl-view-ready", timeout=60_000)
    assert page.evaluate("window.__slFirstPart")
    page.locator(".sl-view-why .sl-why-against select").select_option(index=0)
    page.wait_for_selector(".sl-view-why.sl-view-ready", timeout=60_000)


#: Where the views start, measured from the workbench's top (a message that pushes them down changes it).
VIEWS_TOP = ("document.querySelector('.sl-workbench .sl-views').getBoundingClientRect().top"
             " - document.querySelector('.sl-workbench').getBoundingClientRect().top")


def test_leading_space_marker_and_one_click_fix_and_the_warning_moves_no_view(session):
    page = session["page"]
    row = page.locator(".sl-option-row").nth(1)
    assert row.locator(".sl-space-yes").count() == 1  # " sink": the marker shows its space
    widths = ("[...document.querySelectorAll('.sl-option-row')].map(r => [r.querySelector('.sl-option').offsetWidth, "
              "r.offsetHeight])")
    before, views_top = page.evaluate(widths), page.evaluate(VIEWS_TOP)
    watch_redraw(page, "tokens")
    row.locator(".sl-option input").fill("sink")
    row.locator(".sl-space-no").first.wait_for(timeout=10_000)
    assert "thesink" in row.locator(".sl-option-preview").inner_text().replace("‸", "")
    fix = row.locator(".sl-space-fix")
    fix.wait_for(state="visible", timeout=10_000)
    assert page.evaluate(widths) == before  # the fix button takes its room from the preview: no box or row moves
    wait_redrawn(page, "tokens")  # marked stale by the edit, then ready: in sight, or drawn in the background
    labels = page.locator(".sl-view-tokens .sl-heatmap-label").all_inner_texts()
    assert "sink · premise" in labels and "␣sink · premise" not in labels  # the views in sight read the new option
    page.wait_for_selector(".sl-message .sl-warning", timeout=30_000)  # the notice, in words
    assert "Option 2" in page.inner_text(".sl-message")
    assert page.evaluate(VIEWS_TOP) == views_top  # it has a place of its own: the views stay where one reads them
    fix.click()
    page.wait_for_function("document.querySelectorAll('.sl-option-row')[1].querySelector('input').value === ' sink'",
                           timeout=10_000)
    row.locator(".sl-space-yes").wait_for(timeout=10_000)
    fix.wait_for(state="hidden", timeout=10_000)
    page.wait_for_function("!document.querySelector('.sl-message .sl-warning')", timeout=30_000)
    assert page.evaluate(VIEWS_TOP) == views_top


def test_views_are_marked_stale_while_computing_and_an_edit_redraws_them(session):
    page = session["page"]
    before = page.inner_text(".sl-view-scores .sl-score-table")
    revisions = page.evaluate("[...document.querySelectorAll('.sl-plot')].map(e => e.dataset.slRevision)")
    stale: list[bool] = []
    per_view: dict = {}
    sight: list = []
    seconds = timed_edit(page, "The man took a bath in the", " warm", stale_seen=stale, per_view=per_view,
                         in_sight=sight)
    in_sight = max((per_view[n] for n in sight if per_view.get(n) is not None), default=float("inf"))
    print(f"\nbrowser: keystroke to the views in sight ({', '.join(sight)}) redrawn: {in_sight:.2f} s; the DOM "
          f"quiet: {seconds:.2f} s (shared machine); per view: {per_view}")
    assert stale == [True, True]  # marked stale at once, then busy view by view while the numbers are computed
    assert in_sight <= EDIT_BOUND_S
    assert page.inner_text(".sl-view-scores .sl-score-table") != before
    out_of_sight = [n for n in VIEWS if n not in sight]
    assert out_of_sight, sight
    # then computed in the background, without scrolling: they start once the typing has paused for the
    # workbench's BACKGROUND_IDLE_S, which can be after the views in sight were done and the DOM quiet
    background = ", ".join(f".sl-workbench .sl-view-{n}:not(.sl-view-ready)" for n in out_of_sight)
    try:
        page.wait_for_function(f"!document.querySelector('{background}')", timeout=60_000)
    except Exception:
        raise AssertionError(f"the views out of sight were not drawn in the background: "
                             f"{page_state(page)}") from None
    ready = page.evaluate("(names) => names.map((n) => (window.__slWatch.views[n] - window.__slWatch.key) / 1000)",
                          out_of_sight)
    print("browser: the views out of sight ready (background, plots drawn once in sight) after " + ", ".join(
        f"{n} {t:.2f} s" for n, t in zip(out_of_sight, ready)))
    plots = page.locator(".sl-plot")
    for k in range(plots.count()):  # and drawn: scrolled into sight, each plot shows the new numbers
        plots.nth(k).scroll_into_view_if_needed()
        try:
            page.wait_for_function("([k, old]) => document.querySelectorAll('.sl-plot')[k].dataset.slRevision "
                                   "!== old", arg=[k, revisions[k]], timeout=60_000)
        except Exception:
            states = page.evaluate("[...document.querySelectorAll('.sl-view')].map(e => e.className)")
            raise AssertionError(f"plot {k} was not redrawn: {states}, {page.inner_text('.sl-status')}") from None
    page.wait_for_function("!document.querySelector('.sl-workbench .sl-stale, .sl-workbench .sl-busy')",
                           timeout=60_000)
    assert page.locator(".sl-view-error").count() == 0


def test_a_view_above_that_changes_height_does_not_move_the_view_being_read(session):
    page = session["page"]
    page.evaluate("document.querySelector('.sl-view-why').scrollIntoView({block: 'start'})")
    time.sleep(0.5)
    where = "document.querySelector('.sl-view-why').getBoundingClientRect().top"
    before = page.evaluate(where)
    grow = "(px) => { document.querySelector('.sl-view-scores .sl-view-text').style.paddingBottom = px; }"
    page.evaluate(grow, "90px")  # as a view redrawn in the background above the screen grows (a longer reading)
    time.sleep(0.3)
    grown = page.evaluate(where)
    page.evaluate(grow, "")  # and shrinks back
    time.sleep(0.3)
    shrunk = page.evaluate(where)
    assert abs(grown - before) <= 2 and abs(shrunk - before) <= 2, (before, grown, shrunk)
    page.evaluate("document.querySelector('.sl-workbench').scrollIntoView()")


def test_money_options_are_not_latex(session):
    page = session["page"]
    rows = page.locator(".sl-option-row")
    rows.nth(2).locator(".sl-option input").fill(" $5")
    rows.nth(3).locator(".sl-option input").fill(" $10")
    page.locator(".sl-view-paraphrase").scroll_into_view_if_needed()
    page.wait_for_function("[...document.querySelectorAll('.sl-view-paraphrase svg text')].some("
                           "t => t.textContent.includes('$10'))", timeout=60_000)
    assert page.locator(".sl-view-paraphrase .MathJax, .sl-view-paraphrase mjx-container").count() == 0
    page.wait_for_function("!document.querySelector('.sl-workbench .sl-stale:not(.sl-deferred)')", timeout=60_000)


def test_an_option_with_a_line_break_keeps_it_when_its_box_is_edited(session):
    # SST-2's options end in a line break, which a one-line box cannot hold: the box shows it as ↵, so typing in the
    # box (here a key and its undo) sends the option back with its line break, not silently without it
    page = session["page"]
    rows = page.locator(".sl-option-row")
    kernel(page, "_kept = {k: v for k, v in wb.state().items() if k not in ('lm', 'mlm', 'server')}")
    kernel(page, "wb.set_options([' negative\\n', ' positive\\n'], gold=1)")
    page.wait_for_function("document.querySelector('.sl-option-row .sl-option input').value === ' negative↵'",
                           timeout=30_000)
    page.wait_for_function("document.querySelector('.sl-view-scores .sl-score-table').innerText.includes('negative↵')",
                           timeout=60_000)
    watch_redraw(page, "scores")
    rows.nth(0).locator(".sl-option input").click()
    page.keyboard.press("End")
    page.keyboard.type("x", delay=60)
    page.keyboard.press("Backspace")
    wait_redrawn(page, "scores")
    table = page.inner_text(".sl-view-scores .sl-score-table")
    assert "␣negative↵" in table and "␣positive↵" in table, table
    assert rows.nth(0).locator(".sl-option input").input_value() == " negative↵"
    kernel(page, "wb.load_example(_kept)")
    page.wait_for_function("!document.querySelector('.sl-workbench .sl-stale:not(.sl-deferred)')", timeout=60_000)


def test_add_option_puts_the_cursor_in_the_new_box(session):
    page = session["page"]
    rows = page.locator(".sl-option-row")
    n = rows.count()
    page.locator(".sl-add-option button, button.sl-add-option").first.click()
    rows.nth(n).wait_for(timeout=10_000)
    page.wait_for_function("(n) => document.activeElement === document.querySelectorAll('.sl-option-row')[n]"
                           ".querySelector('.sl-option input')", arg=n, timeout=10_000)
    page.keyboard.type(" sink")  # typed straight into it
    assert rows.nth(n).locator(".sl-option input").input_value() == " sink"
    rows.nth(n).locator(".sl-option-remove").first.click()
    page.wait_for_function(f"document.querySelectorAll('.sl-option-row').length === {n}", timeout=10_000)
    page.wait_for_function("!document.querySelector('.sl-workbench .sl-stale:not(.sl-deferred)')", timeout=60_000)


def show_file_browser(page, shown: bool) -> None:
    """Open or close JupyterLab's left sidebar (the file browser)."""
    if page.evaluate("!window.jupyterapp.shell.leftCollapsed") != shown:
        page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")


@pytest.mark.parametrize("file_browser", [False, True])
def test_at_1440_by_900_the_premise_and_the_first_views_are_in_sight(session, file_browser):
    # JupyterLab opened with its file browser showed the controls only, down to the first view's title
    page = session["page"]
    page.set_viewport_size({"width": 1440, "height": 900})
    show_file_browser(page, file_browser)
    settle(page)
    page.evaluate("document.querySelector('.sl-workbench').scrollIntoView({block: 'start'})")
    settle(page)
    seen = page.evaluate("""() => {
      const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
      const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer, '
                                            + '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
      return {panel: box(panel), premise: box(document.querySelector('.sl-premise textarea')),
              views: [...document.querySelectorAll('.sl-workbench .sl-view')].slice(0, 2).map(box)};
    }""")
    page.screenshot(path=str(session["tmp"] / f"first-screen{'-fb' if file_browser else ''}.png"))
    bottom = min(seen["panel"][3], 900)
    premise, (first, second) = seen["premise"], seen["views"]
    assert seen["panel"][1] <= premise[1] and premise[3] <= bottom, seen
    # the first view's title, its table's head and first rows (the old layout showed its title alone, 30 px)
    in_sight = min(first[3], bottom) - first[1]
    assert in_sight >= min(250, first[3] - first[1]), seen
    assert second[1] == first[1] and second[0] > first[2], seen  # the second view beside it, as much in sight
    show_file_browser(page, False)


def test_the_why_label_is_one_line_and_the_server_box_shows_its_whole_placeholder(session):
    page = session["page"]
    page.locator(".sl-view-why").scroll_into_view_if_needed()
    settle(page)
    label = page.locator(".sl-view-why .sl-heatmap-attribution .sl-heatmap-label").first
    assert label.inner_text().startswith("premise: ★")
    lines = label.evaluate("""(e) => { const r = document.createRange(); r.selectNodeContents(e);
      return new Set([...r.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top))).size; }""")
    assert lines == 1, label.inner_text()  # "premise: ★ ␣bathtub vs ␣pool" broke over three lines
    fits = page.evaluate("""() => {
      const box = document.querySelector('.sl-workbench .sl-server input');
      const style = getComputedStyle(box);
      const ctx = document.createElement('canvas').getContext('2d');
      ctx.font = `${style.fontSize} ${style.fontFamily}`;
      const room = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      return {text: box.placeholder, width: ctx.measureText(box.placeholder).width, room};
    }""")
    assert fits["text"] and fits["width"] <= fits["room"], fits


def test_the_status_line_says_where_the_time_went_with_the_browsers_drawing(session):
    page = session["page"]
    page.evaluate("document.querySelector('.sl-workbench').scrollIntoView({block: 'start'})")
    summary = page.locator(".sl-workbench .sl-timing summary")
    summary.wait_for(timeout=30_000)
    assert summary.inner_text().startswith("where the time went")
    summary.click()
    parts = page.locator(".sl-workbench .sl-timing-parts")
    parts.wait_for(state="visible", timeout=10_000)
    page.wait_for_function("document.querySelector('.sl-workbench .sl-timing-parts').innerText"
                           ".includes('figures drawn in the browser')", timeout=30_000)
    text = parts.inner_text()
    # the last update's views, each with its seconds (in sight, or finished in the background after the wait)
    assert "views computed in the kernel" in text or "then in the background" in text, text
    assert re.search(r"\d · [A-Z][\w ]+ \d+\.\d\d s", text), text
    summary.click()


def test_the_chat_box_shows_the_rendered_turns_and_the_views_score_them(session):
    # smollm2-135m is SmolLM2-135M-Instruct: its tokenizer's chat template is ChatML with a default system turn
    page = session["page"]
    watch_redraw(page, "scores")
    page.locator(".sl-chat input[type=checkbox]").click()
    line = page.locator(".sl-chat-line summary")
    line.wait_for(timeout=30_000)
    assert "reads as chat turns" in line.inner_text() and "<|im_start|>assistant" in line.inner_text()
    wait_redrawn(page, "scores")
    shown = kernel_json(page, "[wb.views['scores'].result.premise, wb.views['scores'].result.domain_premise]")
    expected = kernel_json(page, "[wb.lm.tokenizer.apply_chat_template([{'role': 'user', 'content': c}], "
                                 "tokenize=False, add_generation_prompt=True) for c in (wb.premise_box.value, "
                                 "wb.domain_box.value)]")
    assert shown == expected
    line.click()  # the whole of each string behind a click, escaped (the template's <|im_start|> is text)
    assert page.locator(".sl-chat-line pre").first.inner_text().startswith("<|im_start|>system")
    found = no_horizontal_scroll(page)  # a long turn wraps in its box
    assert found["scrollbars"] == [] and found["overflow"] == [], found
    watch_redraw(page, "scores")
    page.locator(".sl-chat input[type=checkbox]").click()
    page.wait_for_function("!document.querySelector('.sl-chat-line')", timeout=30_000)
    wait_redrawn(page, "scores")
    assert kernel_json(page, "wb.views['scores'].result.premise") == kernel_json(page, "wb.premise_box.value")


@pytest.mark.parametrize("width,file_browser,dark,columns", [
    (1440, False, False, 2), (1280, False, False, None), (1280, True, False, 1), (1920, True, False, 2),
    (1440, False, True, 2)])
def test_layout_without_horizontal_scrolling(session, width, file_browser, dark, columns):
    page = session["page"]
    page.set_viewport_size({"width": width, "height": 900})
    show_file_browser(page, file_browser)
    theme = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate(f"window.jupyterapp.commands.execute('apputils:change-theme', {{theme: '{theme}'}})")
    page.wait_for_function(f"document.body.dataset.jpThemeLight === '{str(not dark).lower()}'", timeout=30_000)
    settle(page)  # the resize observers and the theme's redraw of the figures
    found = no_horizontal_scroll(page)
    assert found["notebook"][0] <= found["notebook"][1], found
    assert found["page"][0] <= found["page"][1], found
    assert found["scrollbars"] == [] and found["overflow"] == [], found
    assert wrapped_labels(page) == [], width
    if columns is not None:
        assert found["columns"] == columns, found
    page.locator(".sl-view-letters").scroll_into_view_if_needed()
    settle(page)  # a figure is drawn when it comes into sight
    colours = page.evaluate("""() => {
      const svg = document.querySelector('.sl-view-letters .main-svg');
      const text = document.querySelector('.sl-view-letters .gtitle, .sl-view-letters .xtick text');
      return {bg: svg && getComputedStyle(svg).backgroundColor, text: text && getComputedStyle(text).fill,
              font: getComputedStyle(document.body).getPropertyValue('--jp-ui-font-color1').trim()};
    }""")
    assert colours["bg"] in ("rgba(0, 0, 0, 0)", "transparent"), colours  # the page's theme shows through
    for view in VIEWS:
        page.locator(f".sl-view-{view}").scroll_into_view_if_needed()
        settle(page)
        assert overlapping_text(page, view) == [], view
    page.screenshot(path=str(session["tmp"] / f"layout-{width}{'-fb' if file_browser else ''}"
                                              f"{'-dark' if dark else ''}.png"))


def test_no_errors_and_a_clean_checkout(session):
    assert not session["errors"], session["errors"]
    assert git_status() == session["git_before"]  # notebooks ran from the lab copies; nothing was written here
