"""The views' PNG / HTML exports: each names what it shows, Why's holds the whole view, pages share one plotly.js.

No pixels: a PNG export is read as the figure handed to kaleido (stubbed: it needs a Chromium), an HTML export as
the page's text.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from spreadsheet import check_cells
from surfacelab.widgets import Workbench
from surfacelab.widgets.workbench.exporting import HEADER_LINES, LINE_PX, context, with_header
from surfacelab.widgets.workbench.inputs import Inputs

# markup in a premise is text: it must show as typed, never be read as HTML
PREMISE = "<b>Tom</b> & <script>alert(1)</script> took a bath in the"
SHOWN = "&lt;b&gt;Tom&lt;/b&gt; &amp; &lt;script&gt;alert(1)&lt;/script&gt; took a bath in the"
OPTIONS = [" bathtub", " soap", " milk", " mat"]
API_KEY = "sk-test-never-shown"
#: The most an HTML page may weigh: the figure's JSON is 6-16 KB here, plotly.js alone 4.8 MB, so a page over this
#: carries plotly.js (or something as wrong), and bigger figures (long premises, many options) still fit.
PAGE_LIMIT = 100_000


@pytest.fixture
def bench(tiny_lm, tiny_mlm, tmp_path):
    b = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path / "exports", api_key=API_KEY)
    b.premise_box.value = PREMISE
    b.domain_box.value = " the"
    b.set_options(OPTIONS, ["tub, bath tub", "", "", ""], gold=0)
    b.update()
    yield b
    b.close()


@pytest.fixture
def drawn(monkeypatch):
    """The figures PNG exports hand to kaleido, which writes a stub instead."""
    figures = []

    def write_image(fig, path, **kwargs):
        figures.append(fig)
        Path(path).write_bytes(b"\x89PNG stub")

    monkeypatch.setattr(go.Figure, "write_image", write_image)
    return figures


def page_text(path: Path) -> str:
    """An HTML export's text with the figure's JSON escapes (``\\u003c`` for ``<`` and the like) read back."""
    return path.read_text().encode("ascii", "backslashreplace").decode("unicode_escape")


def test_every_export_names_premise_domain_premise_options_and_model(bench, drawn, tiny_lm, tiny_mlm):
    for name, view in bench.views.items():
        bench.export(name, bench.exporter.export_dir / f"{name}.png")
        title = drawn[-1].layout.title.text
        model = f"masked LM: {tiny_mlm.name}" if name == "pll" else f"causal LM: {tiny_lm.name}"
        assert f"<b>{view.title}</b>" in title and f"premise: {SHOWN}" in title and model in title, name
        assert "options (★ gold): ★ 1: ␣bathtub   2: ␣soap   3: ␣milk   4: ␣mat" in title, name
        # the domain premise where the view reads it (letters and PLL do not)
        assert ("domain premise: ␣the" in title) == ("domain_premise" in view.needs), name
        page = page_text(bench.export(name, bench.exporter.export_dir / f"{name}.html"))
        assert f"premise: {SHOWN}" in page and model in page and API_KEY not in page, name
        assert "options (★ gold): ★ 1: ␣bathtub   2: ␣soap   3: ␣milk   4: ␣mat" in page, name


def test_markup_typed_in_the_inputs_is_shown_as_typed(bench, drawn):
    for name in bench.views:
        bench.export(name, bench.exporter.export_dir / f"{name}.png")
        assert SHOWN in drawn[-1].layout.title.text and "<script>" not in drawn[-1].layout.title.text
        page = page_text(bench.export(name, bench.exporter.export_dir / f"{name}.html"))
        assert SHOWN in page and "<script>alert" not in page and "<b>Tom" not in page, name


def test_why_export_holds_the_whole_view(bench, drawn):
    view = bench.views["why"]
    assert view.premise_map.rows and len(view.result.competitors)  # the view draws all three parts
    bench.export("why", bench.exporter.export_dir / "why.png")
    fig = drawn[-1]
    kinds = {(t.type, t.name) for t in fig.data}
    assert ("waterfall", None) in kinds  # the gap
    assert ("bar", "occlusion: remove") in kinds and ("bar", "occlusion: replace") in kinds  # the premise map
    assert {t.name for t in fig.data if t.orientation == "h"} == set(view.result.competitors["group"].head(10))
    panels = [a.text for a in fig.layout.annotations]
    assert panels == ["Where the LM gap comes from", "Premise words: support for the gold",
                      "Where the gold's mass went (next-token probability)"]
    # one panel under the other, each on its own axes
    domains = sorted(fig.layout[f"yaxis{k}"].domain for k in ("", 2, 3))
    assert all(a[1] < b[0] for a, b in zip(domains, domains[1:]))
    assert {(t.xaxis, t.yaxis) for t in fig.data} == {("x", "y"), ("x2", "y2"), ("x3", "y3")}
    title = fig.layout.title.text
    against = view.result.against
    assert f"compared: ★ 1: ␣bathtub with {against + 1}: {OPTIONS[against].replace(' ', '␣')}" in title
    assert f"verdict: {view.result.verdict}" in title and f"premise: {SHOWN}" in title


def test_html_pages_share_one_plotly_js_beside_them(bench):
    js = bench.exporter.export_dir / f"plotly-{get_plotlyjs_version()}.min.js"
    pages = [bench.export(name, bench.exporter.export_dir / f"{name}.html") for name in ("letters", "why")]
    for page in pages:
        text = page.read_text()
        assert page.stat().st_size < PAGE_LIMIT and f'src="{js.name}"' in text
        assert "put a copy next to this file" in text  # what a page opened without it says
    assert list(bench.exporter.export_dir.glob("*.js")) == [js] and js.read_text() == get_plotlyjs()
    # readable by whoever may read the pages (a folder copied to a web server serves both)
    assert {oct(p.stat().st_mode & 0o777) for p in [js, *pages]} == {oct(0o666 & ~_umask())}
    js.write_text("cut short")  # a copy that is not whole is written again
    bench.export("letters", bench.exporter.export_dir / "again.html")
    assert js.read_text() == get_plotlyjs()


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_the_header_names_the_server_and_never_the_api_key():
    inp = Inputs("The man took a bath in the", None, tuple(OPTIONS), ((),) * 4, None)
    lm = SimpleNamespace(name="served-lm", backend=SimpleNamespace(url="http://gpu-box:8000/v1", api_key=API_KEY))
    fields = context(inp, lm, ("premise", "domain_premise", "options", "lm"))
    assert fields == [("premise", "The man took a bath in the"), ("domain premise", "none"),
                      ("options (no gold marked)", "1: ␣bathtub   2: ␣soap   3: ␣milk   4: ␣mat"),
                      ("causal LM", "served-lm on http://gpu-box:8000/v1")]


def test_a_long_premise_is_cut_and_the_figure_grows_by_the_header():
    spec = {"data": [], "layout": {"title": {"text": "Own"}, "height": 300, "margin": {"t": 48}}}
    out = with_header(spec, "1 · View", [("premise", "word " * 300), ("causal LM", "m")])
    lines = out["layout"]["title"]["text"].split("<br>")
    assert lines[0] == "<b>1 · View</b> · Own" and len(lines) == 1 + HEADER_LINES + 1
    assert lines[HEADER_LINES].endswith("…</span>")
    added = out["layout"]["margin"]["t"] - 48
    assert added >= LINE_PX * (HEADER_LINES + 1) and out["layout"]["height"] == 300 + added
    assert spec["layout"] == {"title": {"text": "Own"}, "height": 300, "margin": {"t": 48}}  # the view's own is kept


def test_every_views_csv_is_spreadsheet_safe(tiny_lm, tiny_mlm, tmp_path):
    b = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)
    b.premise_box.value = "=cmd|' /C calc'!A0 took a bath in the"
    b.domain_box.value = "-so"
    b.set_options([" bathtub", '=HYPERLINK("http://x")', "-2+3", "@SUM(A1)", "'=1"], ["", "", "", "", ""], gold=0)
    b.update()
    escaped = {}
    for name, view in b.views.items():
        if view.data is None:
            continue
        data = view.data
        data = data.drop(columns=[c for c in data.columns if data[c].dtype == object
                                  and data[c].map(lambda v: isinstance(v, (list, tuple))).any()])
        escaped[name] = check_cells(b.export(name, tmp_path / f"{name}.csv"), data)
    assert escaped["scores"] >= 4 and (b.views["scores"].data["logprob"] < 0).all()  # numbers stay numbers
    b.close()
