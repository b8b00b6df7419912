"""``sl.lesson``: one HTML file per lesson, every view of every item as the workbench computes it, escaped, with the
lesson text of notebook 02 (answers folded) for the teaching set; the items it reads and the errors it gives; the
workbench's "export lesson" button. Tiny in-memory models; a ``slow`` test builds from the real default models."""

from __future__ import annotations

import html
import json
import re
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

import surfacelab as sl
from surfacelab.paraphrase import load_teaching_set
from surfacelab.widgets import VIEWS, Workbench
from surfacelab.widgets.lesson.build import lesson_items
from surfacelab.widgets.lesson.page import script_json
from surfacelab.widgets.lesson.text import notebook_cells

#: The size a lesson of the 30-item teaching set may reach (docs/lesson.md).
SIZE_LIMIT = 15_000_000
EVIL = "The man <img src=x onerror=alert(1)> took a bath in the </script><script>alert(2)</script>"
ITEMS = [
    {"premise": EVIL, "domain_premise": " the", "options": [" bathtub", " <b>soap</b>", " milk & eggs"],
     "paraphrases": ["tub, bath tub", "", ""], "gold": 0, "title": "</script><img src=y onerror=alert(3)>"},
    {"premise": "A cat sat on the", "domain_premise": None, "options": [" mat", " dog"], "gold": 1},
]


class Page(HTMLParser):
    """The parts of a lesson page the tests read: every start tag, and per page (``data-page``) its views, its
    placeholders and its data script (parsed JSON)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.pages: dict[str, dict] = {}
        self.current: str | None = None
        self.script: dict | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "section":
            self.current = a["data-page"]
            self.pages[self.current] = {"views": [], "figures": 0, "heatmaps": 0, "data": None, "answers": 0}
        elif self.current is not None:
            page = self.pages[self.current]
            page["views"] += [a["data-view"]] if "data-view" in a else []
            page["figures"] += "data-figure" in a
            page["heatmaps"] += "data-heatmap" in a
            page["answers"] += tag == "details" and "sl-answer" in a.get("class", "")
        self.script = a if tag == "script" else None

    def handle_data(self, data: str) -> None:
        if self.script is not None and "sl-page-data" in self.script.get("class", ""):
            self.pages[self.current]["data"] = json.loads(data)

    def handle_endtag(self, tag: str) -> None:
        self.script = None
        if tag == "section":
            self.current = None


@pytest.fixture(scope="module")
def built(tiny_lm, tiny_mlm, tmp_path_factory):
    """A lesson of ``ITEMS`` and the page as text."""
    path = sl.lesson(ITEMS, tmp_path_factory.mktemp("lesson") / "lesson.html", lm=tiny_lm, mlm=tiny_mlm,
                     progress=False)
    return path, path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def reference(tiny_lm, tiny_mlm):
    """The workbench's own views for each item (a separate Workbench, updated as a person would)."""
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False)
    out = []
    for item in ITEMS:
        bench.load_example({k: v for k, v in item.items() if k != "title"})
        bench.update()
        out.append({name: {"text": v.text.value, "message": v.message,
                           "figures": [p.figure for p in _plots(v.box) if p.figure],
                           "heatmaps": [h.rows for h in _heatmaps(v.box) if h.rows]}
                    for name, v in bench.views.items()})
    bench.close()
    return out


def _walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from _walk(child)


def _plots(box):
    from surfacelab.widgets import PlotView
    return [w for w in _walk(box) if isinstance(w, PlotView)]


def _heatmaps(box):
    from surfacelab.widgets import TokenHeatmap
    return [w for w in _walk(box) if isinstance(w, TokenHeatmap)]


def test_every_item_has_its_inputs_and_every_view_as_the_workbench_computes_them(built, reference):
    _, text = built
    page = Page(text)
    assert list(page.pages) == ["item-1", "item-2"]
    for k, (item, ref) in enumerate(zip(ITEMS, reference)):
        p = page.pages[f"item-{k + 1}"]
        assert p["views"] == list(VIEWS)
        assert html.escape(item["premise"]) in text
        # each view's reading in words (or its error), its figures and its heatmaps: the workbench's for the item
        for name, view in ref.items():
            shown = view["text"] or html.escape(view["message"])
            assert shown and shown in text, name
        figures = [f for view in ref.values() for f in view["figures"]]
        heatmaps = [h for view in ref.values() for h in view["heatmaps"]]
        assert p["figures"] == len(p["data"]["figures"]) == len(figures)
        assert json.loads(script_json(figures)) == p["data"]["figures"]
        assert [h["rows"] for h in p["data"]["heatmaps"]] == json.loads(script_json(heatmaps))
        assert p["heatmaps"] == len(heatmaps) >= 1
    # the gold marked; the Why verdict sentence of the first item (its gold is marked)
    assert "★ <code class='sl-opt'>␣bathtub</code>" in text
    assert "<div class='sl-why-verdict-text'><span class='sl-why-label'>" in text


def test_user_text_never_becomes_markup(built):
    _, text = built
    page = Page(text)
    tags = {tag for tag, _ in page.tags}
    assert "img" not in tags
    scripts = [a for tag, a in page.tags if tag == "script"]
    # the data of each page, plotly.js and the heatmap's script as text, and the page's own script: nothing else
    assert [a.get("type") for a in scripts] == ["application/json"] * 2 + ["text/plain"] * 2 + [None]
    assert not any("src" in a for a in scripts)
    assert len(re.findall("</script", text, re.IGNORECASE)) == len(scripts)
    assert "<b>soap</b>" not in text and "&lt;b&gt;soap&lt;/b&gt;" in text and "milk &amp; eggs" in text
    assert html.escape(ITEMS[0]["title"]) in text
    assert "\u2028" not in text


def test_script_json_escapes_what_could_end_a_script():
    value = {"s": "</script><!-- a & b > c \u2028\u2029", "n": float("nan")}
    out = script_json(value)
    assert not set(out) & {"<", ">", "&", "\u2028", "\u2029"}
    assert json.loads(out) == {"s": value["s"], "n": None}


def test_the_size_of_a_teaching_set_lesson_fits(built):
    path, text = built
    page = Page(text)
    per_item = max(len(script_json(p["data"])) for p in page.pages.values())  # the data of the largest page
    # plotly.js and the scripts, plus 30 pages of data at most as large (their HTML is a few KB more each)
    assert path.stat().st_size + 30 * (per_item + 20_000) < SIZE_LIMIT


def test_the_teaching_set_brings_notebook_02_with_its_answers_folded(tiny_lm, tiny_mlm, tmp_path):
    items = load_teaching_set()[:2]  # two items keep it short; the text is asked for (a part goes without it)
    path = sl.lesson(items, tmp_path / "teaching.html", lm=tiny_lm, mlm=tiny_mlm, progress=False, lesson_text=True)
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert list(page.pages) == ["lesson", "item-1", "item-2"]
    found, teaching = lesson_items(items)
    assert lesson_items(load_teaching_set())[1] and not teaching  # the whole packaged set's own, not a part of it
    assert not lesson_items([dict(it, premise="Another premise") for it in load_teaching_set()])[1]
    assert [set(f.example) for f in found] == [{"premise", "domain_premise", "options", "paraphrases", "gold"}] * 2
    assert page.pages["lesson"]["answers"] == 4  # the four exercises, each answer folded
    folded = re.findall(r"<details class='sl-answer'><summary>(Answer \d)[^<]*</summary>(.*?)</details>", text, re.S)
    assert [a for a, _ in folded] == ["Answer 1", "Answer 2", "Answer 3", "Answer 4"]
    # what the answer cells print is inside their fold, not outside it
    assert "Concept mass is only as good as the list of spellings" in folded[1][1]
    outside = re.sub(r"<details class='sl-answer'>.*?</details>", "", text, flags=re.S)
    assert "Concept mass is only as good as the list of spellings" not in outside
    assert "<h1>Surface form competition, as a lesson</h1>" in text and "<h2>Exercises</h2>" in text
    for item in items:  # each item with its teaching note and lesson label
        assert html.escape(item["note"]) in text and html.escape(item["premise"]) in text
    bare = sl.lesson(items, tmp_path / "bare.html", lm=tiny_lm, mlm=tiny_mlm, progress=False, lesson_text=False)
    assert list(Page(bare.read_text(encoding="utf-8")).pages) == ["item-1", "item-2"]


def test_a_part_of_the_teaching_set_is_a_lesson_of_those_items_only(tiny_lm, tiny_mlm, tmp_path):
    """``sl.lesson(items[:3])``: three item pages, none of the whole set's text (its table of 30 items, "each item of
    the set"), a title that does not claim the teaching set, and no cost line for the student to puzzle over."""
    items = load_teaching_set()[:3]
    text = sl.lesson(items, tmp_path / "three.html", lm=tiny_lm, mlm=tiny_mlm, progress=False).read_text("utf-8")
    assert list(Page(text).pages) == ["item-1", "item-2", "item-3"]
    title = re.search(r"<title>(.*?)</title>", text, re.S)[1]
    assert "teaching set" not in title and "3 items" in title, title
    for whole_set in ("notebook 02", "Each item of the set", "02_teaching_surface_form_competition",
                      load_teaching_set()[5]["id"]):
        assert whole_set not in text, whole_set
    assert "tokens forwarded" not in text and "score cache" not in text


def test_the_notebook_runs_with_the_lessons_model(tiny_lm):
    cells = notebook_cells(tiny_lm)
    code = [c for c in cells if c.kind == "code"]
    assert [c.answer for c in code if c.answer] == ["Answer 1", "Answer 2", "Answer 3",
                                                    "Answer 4 (an example; change it)"]
    assert any(c.figures for c in code)  # the worked example's figure, drawn by the page
    # the numbers are the model's given: the closing count of the items the best single form misses
    items = load_teaching_set()
    table = sl.paraphrase.winners_table(sl.paraphrase.mass_items(tiny_lm, items, progress=False))
    missed = int(table["lm_correct"].eq(False).sum())
    assert f"the best single form rule misses {missed} of {len(items)} items" in code[-1].html


def test_an_item_the_workbench_refuses_says_why_on_its_page(tiny_lm, tiny_mlm, tmp_path):
    items = [{"premise": "A cat sat on the", "options": [" mat"]}, {"premise": "A cat sat on the",
                                                                   "options": [" mat", " dog"]}]
    text = sl.lesson(items, tmp_path / "refused.html", lm=tiny_lm, mlm=tiny_mlm, progress=False).read_text("utf-8")
    first, second = re.findall(r"<section.*?</section>", text, re.S)
    assert "at least two options" in first and first.count("waiting for valid inputs") == len(VIEWS)
    assert "waiting for valid inputs" not in second and "Mark the gold answer" in second  # Why asks for a gold


def test_items_from_saved_states_are_read_as_data(tiny_lm, tiny_mlm, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)
    bench.load_example({"premise": "<script>alert(4)</script> A cat sat on the", "domain_premise": " the",
                        "options": [" mat", " dog"], "paraphrases": ["rug", ""], "gold": 0})
    state = bench.save_state(tmp_path / "states" / "cat.json")
    bench.close()
    doc = json.loads(state.read_text())
    doc["server"] = "http://127.0.0.1:9/v1"  # a server named by a file is never contacted
    state.write_text(json.dumps(doc))
    (tmp_path / "states" / "other.json").write_text('{"not": "a state"}')
    found, teaching = lesson_items(tmp_path / "states")
    assert [i.title for i in found] == ["cat"] and not teaching
    assert set(found[0].example) == {"premise", "domain_premise", "options", "paraphrases", "gold"}
    for source in (state, tmp_path / "states"):
        text = sl.lesson(source, tmp_path / "states.html", lm=tiny_lm, mlm=tiny_mlm,
                         progress=False).read_text(encoding="utf-8")
        assert "&lt;script&gt;alert(4)&lt;/script&gt; A cat sat on the" in text
        assert "<script>alert(4)" not in text and "127.0.0.1:9" not in text


@pytest.mark.parametrize("items, path, error, words", [
    ("nonsense", "x.html", ValueError, "items: expected 'teaching'"),
    ("missing.json", "x.html", FileNotFoundError, "items: no saved-state file"),
    ([], "x.html", ValueError, "items: an empty list"),
    (42, "x.html", TypeError, "items: expected"),
    ([{"premise": "A", "options": [" b", " c"]}, {"options": [" b"]}], "x.html", ValueError, "items[1]: premise"),
    ([{"premise": "A", "options": [" b", " c"], "gold": 5}], "x.html", ValueError, "items[0]: gold"),
    ("teaching", "lesson.htm", ValueError, "path: expected a file name ending in .html"),
    ("teaching", 3, TypeError, "path: expected a .html file name"),
])
def test_bad_input_is_a_clear_error_naming_the_argument(tmp_path, monkeypatch, items, path, error, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error) as caught:
        sl.lesson(items, path, lm="not-loaded", progress=False)
    assert str(caught.value).startswith(words)
    assert not list(tmp_path.glob("*.html"))


def test_a_folder_without_states_and_other_bad_arguments(tmp_path):
    (tmp_path / "notes.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="items: no saved workbench state"):
        sl.lesson(tmp_path, tmp_path / "x.html", progress=False)
    with pytest.raises(TypeError, match="progress: expected"):
        sl.lesson("teaching", tmp_path / "x.html", progress="yes")


def test_the_export_lesson_button_writes_the_item_shown(tiny_lm, tiny_mlm, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)
    bench.load_example(ITEMS[1])
    bench.update()
    shown = {name: v.text.value for name, v in bench.views.items()}
    assert bench.lessons.picker.value == "item"
    bench.lessons.button.click()
    assert bench.lessons.button.description == "cancel lesson"
    assert bench.lessons.runner.wait(300)
    assert bench.lessons.button.description == "export lesson"
    [path] = tmp_path.glob("lesson-*.html")
    assert "saved" in bench.exporter.note.value and path.name in bench.exporter.note.value
    text = path.read_text(encoding="utf-8")
    assert list(Page(text).pages) == ["item-1"] and html.escape(ITEMS[1]["premise"]) in text
    assert all(t in text for t in shown.values())  # the same readings as the views shown
    assert {name: v.text.value for name, v in bench.views.items()} == shown  # its views untouched
    bench.close()


def test_cancel_stops_a_lesson_being_built(tiny_lm, tiny_mlm, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)
    bench.lessons.picker.value = "teaching"
    bench.lessons.button.click()
    bench.lessons.button.click()  # the button, now "cancel lesson", stops the build before it begins
    assert bench.lessons.runner.wait(120)
    assert "cancelled" in bench.exporter.note.value and bench.lessons.button.description == "export lesson"
    bench.lessons.button.click()
    end = time.monotonic() + 120
    while "computed item 1 of 30" not in bench.exporter.note.value:  # the progress note, after the first item
        assert time.monotonic() < end, bench.exporter.note.value
        time.sleep(0.05)
    bench.lessons.button.click()  # and while it runs
    assert bench.lessons.runner.wait(120)
    assert "cancelled" in bench.exporter.note.value and bench.lessons.button.description == "export lesson"
    assert not list(tmp_path.glob("lesson-*.html"))
    bench.close()


@pytest.mark.slow
def test_a_lesson_from_the_real_default_models(real_lm, real_mlm, tmp_path):
    items = load_teaching_set()[:3]
    path = sl.lesson(items, tmp_path / "real.html", lm=real_lm, mlm=real_mlm, progress=False, lesson_text=True)
    text = path.read_text(encoding="utf-8")
    page = Page(text)
    assert list(page.pages) == ["lesson", "item-1", "item-2", "item-3"]
    for k in range(1, 4):
        p = page.pages[f"item-{k}"]
        assert p["views"] == list(VIEWS) and p["figures"] >= 5 and p["heatmaps"] == 2  # tokens and Why's premise
    assert "class='sl-error'" not in text  # no view failed
    assert text.count("<div class='sl-why-verdict-text'>") == 3 and page.pages["lesson"]["answers"] == 4
    per_item = max(len(script_json(p["data"])) for p in page.pages.values())
    assert path.stat().st_size + 27 * (per_item + 20_000) < SIZE_LIMIT
    assert Path(path).stat().st_size < SIZE_LIMIT
