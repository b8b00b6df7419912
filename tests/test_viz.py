"""viz: figures are checked on their data (values, fills, labels), built from hand-made frames."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from surfacelab import _format, viz
from surfacelab.scorers import SCORER_LABELS


def _table() -> pd.DataFrame:
    # hand-made MCResult.table: option 'b' wins LM, option 'a' wins DC-PMI; pmi_null unavailable
    return pd.DataFrame({
        "option": [" a", " b", " c"],
        "logprob": [-5.0, -2.0, -9.0], "avg_token": [-2.5, -2.0, -9.0], "per_char": [-2.5, -1.0, -4.5],
        "per_byte": [-2.5, -1.0, -4.5], "unc": [-9.0, -2.5, -9.5], "dcpmi": [4.0, 0.5, 0.5],
        "pmi_null": [np.nan, np.nan, np.nan],
    }).assign(rank_lm=[2, 1, 3], rank_avg=[2, 1, 3], rank_per_char=[2, 1, 3], rank_per_byte=[2, 1, 3],
              rank_unc=[2, 1, 3], rank_dcpmi=[1, 2, 2], rank_pmi_null=[np.nan] * 3)


def test_scorer_table_highlights_each_scorers_winner_and_marks_gold():
    fig = viz.scorer_table(_table(), gold=0)
    cell = fig.data[0]
    headers = list(cell.header.values)
    assert [h.replace("\u00a0", " ") for h in headers] == ["option", "LM", "Avg", "per char", "per byte", "Unc",
                                                            "DC-PMI"]  # pmi_null is all NaN
    assert cell.cells.values[0][0].startswith("★") and not cell.cells.values[0][1].startswith("★")
    assert " " not in "".join(cell.cells.values[0])  # no wrappable spaces in option names
    fills = cell.cells.fill.color
    lm_col, dcpmi_col = headers.index("LM"), headers.index("DC-PMI")
    assert [f == viz.WINNER_FILL for f in fills[lm_col]] == [False, True, False]
    assert [f == viz.WINNER_FILL for f in fills[dcpmi_col]] == [True, False, False]
    assert [f == viz.WINNER_FILL for f in fills[headers.index("Unc")]] == [False, True, False]
    assert fills[0][0] == viz.GOLD_FILL and fills[0][1] == viz.PLAIN_FILL
    assert list(cell.cells.values[lm_col]) == ["-5.000", "<b>-2.000</b>", "-9.000"]


def test_scorer_table_draws_its_cells_as_the_workbench_table_does():
    # the PNG export left-aligned the numbers and filled the gold option's whole row, unlike the widget
    fig = viz.scorer_table(_table(), gold=0)
    cell = fig.data[0]
    n = len(cell.header.values)
    assert list(cell.header.align) == list(cell.cells.align) == ["left"] + ["right"] * (n - 1)
    fills = cell.cells.fill.color
    assert fills[0][0] == viz.GOLD_FILL and all(fills[c][0] in (viz.PLAIN_FILL, viz.WINNER_FILL) for c in range(1, n))
    assert all((value.startswith("<b>")) == (fill == viz.WINNER_FILL)  # a winner is bold, as in the widget
               for c in range(1, n) for value, fill in zip(cell.cells.values[c], fills[c]))
    css = (Path(viz.__file__).parents[1] / "widgets" / "workbench" / "workbench.css").read_text()
    assert f"td.sl-win {{ background: {viz.WINNER_FILL};" in css and "font-weight: bold" in css
    assert f"tr.sl-gold-row td:first-child {{ background: {viz.GOLD_FILL}; }}" in css


def test_scorer_table_rejects_bad_input():
    with pytest.raises(TypeError, match="table"):
        viz.scorer_table([1, 2])
    with pytest.raises(ValueError, match="missing column"):
        viz.scorer_table(_table().drop(columns="dcpmi"))
    with pytest.raises(ValueError, match="gold"):
        viz.scorer_table(_table(), gold=3)


def _tokens() -> pd.DataFrame:
    rows = []
    for opt, lps, dlps in [(" ab", [-1.0, -2.0], [-3.0, -2.5]), (" c", [-4.0], [-1.0])]:
        for cond, values in (("premise", lps), ("domain", dlps)):
            for p, lp in enumerate(values):
                rows.append({"option": opt, "condition": cond, "position": p, "token": f"t{p}", "token_id": 10 + p,
                             "logprob": lp, "rank": p + 1, "entropy": 1.5,
                             "contribution": lps[p] - dlps[p],
                             "alternatives": [("x", -0.5), ("y", -0.9)]})
    return pd.DataFrame(rows)


def test_token_heatmap_places_logprobs_and_contributions():
    fig = viz.token_heatmap(_tokens())
    lp, contrib = fig.data
    assert list(lp.y) == ["␣ab · premise", "␣ab · domain", "␣c · premise", "␣c · domain"]  # ␣ = leading space
    z = np.array(lp.z, dtype=float)
    assert z[0, :2].tolist() == [-1.0, -2.0] and z[1, :2].tolist() == [-3.0, -2.5]
    assert z[2, 0] == -4.0 and np.isnan(z[2, 1])
    zc = np.array(contrib.z, dtype=float)
    assert zc[0, :2].tolist() == [2.0, 0.5] and zc[1, 0] == -3.0
    assert contrib.zmin == -3.0 and contrib.zmax == 3.0  # symmetric around 0
    hover = lp.customdata[0][0]
    assert "id 10" in hover and "rank 1" in hover and "x -0.50" in hover


def _mass() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    forms = pd.DataFrame({"concept": ["tub", "tub", "tub", "sink"], "form": [" bathtub", " tub", " bath", " sink"],
                          "prob": [0.1, 0.1, 0.1, 0.2]})
    forms["share_of_listed"] = forms["prob"] / forms["prob"].sum()
    forms["share_of_concept"] = forms["prob"] / forms.groupby("concept")["prob"].transform("sum")
    concepts = pd.DataFrame({"concept": ["tub", "sink"], "share": [0.6, 0.4], "domain_share": [0.5, 0.5],
                             "dcpmi": [0.1, -0.2]})
    winners = pd.DataFrame({"scorer": ["lm", "mass", "dcpmi"], "concept": ["sink", "tub", "tub"],
                            "form": [" sink", None, None]})
    return forms, concepts, winners


def test_paraphrase_mass_stacks_forms_into_concept_shares():
    forms, concepts, winners = _mass()
    fig = viz.paraphrase_mass(forms, concepts, winners, answer="tub")
    stacked = [t for t in fig.data if t.xaxis == "x"]
    per_bar: dict[str, float] = {}
    for t in stacked:
        per_bar[t.x[0]] = per_bar.get(t.x[0], 0) + t.y[0]
    assert per_bar == pytest.approx({"★ tub": 0.6, "sink": 0.4})
    totals = [t for t in fig.data if t.xaxis == "x2"]
    assert [t.name for t in totals] == ["premise", "domain premise"]
    assert list(totals[0].y) == [0.6, 0.4]
    # the rule over every listed form, named for what it reads (the scorer view's "LM" reads the options alone)
    title = fig.layout.title.text
    assert "best single form: <b>␣sink</b> (concept <b>sink</b>)" in title and "concept mass: <b>tub</b>" in title
    assert "LM:" not in title


def _rules_in(title: str) -> list[str]:
    """The rule names of a paraphrase title's winners lines ("name: <b>winner</b>", joined by " · " and <br>)."""
    lines = title.split("winners — ")[1].replace("</sup>", "").replace("<br>", " · ").split(" · ")
    return [line.split(": <b>")[0] for line in lines if ": <b>" in line]


def test_paraphrase_title_names_the_winning_form_with_its_concept_and_says_what_form_dcpmi_is():
    """The workbench names a concept after its option (' an oven' -> 'an oven'); when another of its forms
    (' the oven') is the best single form, the title shows that form and labels the concept as a concept."""
    forms = pd.DataFrame({"concept": ["an oven", "an oven", "a pan", "a pan"],
                          "form": [" an oven", " the oven", " a pan", " a frying pan"],
                          "prob": [0.1, 0.3, 0.2, 0.15], "dcpmi": [0.5, -0.25, 0.125, 1.5]})
    forms["share_of_listed"] = forms["prob"] / forms["prob"].sum()
    forms["share_of_concept"] = forms["prob"] / forms.groupby("concept")["prob"].transform("sum")
    concepts = pd.DataFrame({"concept": ["an oven", "a pan"], "share": [0.4 / 0.75, 0.35 / 0.75],
                             "domain_share": [0.5, 0.5], "dcpmi": [0.2, 0.6]})
    winners = pd.DataFrame({"scorer": ["lm", "mass", "dcpmi", "dcpmi_form"],
                            "concept": ["an oven", "an oven", "a pan", "a pan"],
                            "form": [" the oven", None, None, " a frying pan"]})
    spec = viz.paraphrase_mass_spec(forms, concepts, winners, answer="a pan")
    title = spec["layout"]["title"]["text"]
    assert "best single form: <b>␣the oven</b> (concept <b>an oven</b>)" in title
    assert "form DC-PMI: <b>␣a frying pan</b> (concept <b>a pan</b>)" in title
    # no rule borrows a scorer-table name ("LM", "DC-PMI" score the options as given)
    assert _rules_in(title) == ["best single form", "concept mass", "concept DC-PMI", "form DC-PMI"]
    assert not set(_rules_in(title)) & set(SCORER_LABELS.values())
    assert title.count("<br>") == 4  # one rule a line: two a line ran past a 560 px view
    # each form's own DC-PMI is in its hover, with what it is, so the form DC-PMI winner can be checked
    hovers = [t["hovertemplate"] for t in spec["data"] if t["xaxis"] == "x"]
    assert "form DC-PMI = 1.500 (log P(form|premise) − log P(form|domain premise))" in hovers[3]
    assert "form DC-PMI = -0.250" in hovers[1]
    # without a domain premise there is no form DC-PMI winner to explain
    bare = viz.paraphrase_mass_spec(forms.drop(columns="dcpmi"), concepts, winners[:2])["layout"]["title"]["text"]
    assert "DC-PMI" not in bare


def test_paraphrase_mass_keeps_long_options_readable():
    """ARC-length options: short wrapped tick labels on both panels (the bars keep the full names), a shortened
    winners line, the totals' colour key in their panel title instead of a legend under the tick labels."""
    forms, concepts, winners = _mass()
    long = {"tub": "buildings will be made safer", "sink": "building materials will be cheaper"}
    forms, concepts, winners = (f.replace(long) for f in (forms, concepts, winners))
    spec = viz.paraphrase_mass_spec(forms, concepts, winners, answer=long["tub"])
    ticks = {"xaxis": ["★ 1 · buildings<br>will be made…", "2 · building<br>materials will…"],
             "xaxis2": ["★ 1", "2"]}  # the narrow totals panel: the options' numbers
    for axis, text in ticks.items():
        ax = spec["layout"][axis]
        assert ax["tickvals"] == ["★ buildings will be made safer", "building materials will be cheaper"]
        assert ax["ticktext"] == text and ax["tickangle"] == 0
    short = viz.paraphrase_mass_spec(*_mass(), answer="tub")["layout"]
    assert short["xaxis"]["ticktext"] == short["xaxis2"]["ticktext"] == ["★ tub", "sink"]  # short: as they are
    assert {t["x"][0] for t in spec["data"] if t["xaxis"] == "x"} == set(spec["layout"]["xaxis"]["tickvals"])
    assert ("best single form: <b>␣sink</b> (concept <b>building materials will be ch…</b>)"
            in spec["layout"]["title"]["text"])
    assert not any(t.get("showlegend", True) for t in spec["data"])
    key = spec["layout"]["annotations"][1]["text"]
    assert "■</span> premise" in key and "■</span> domain premise" in key
    assert spec["layout"]["uniformtext"]["mode"] == "hide"
    # a form's name inside its bar where it fits; a long one only in the hover
    assert [t["text"] for t in spec["data"] if t["xaxis"] == "x"] == [["␣bathtub"], ["␣tub"], ["␣bath"], ["␣sink"]]
    forms.loc[0, "form"] = " buildings will be made safer"
    bars = viz.paraphrase_mass_spec(forms, concepts, winners)["data"]
    assert bars[0]["text"] == [""] and "buildings will be made safer" in bars[0]["hovertemplate"]


def test_letter_priors_one_bar_series_per_column():
    table = pd.DataFrame({"id": list("ABCD"), "observed": [0.4, 0.3, 0.2, 0.1], "prior": [0.25] * 4,
                          "calibrated": [0.3, 0.3, 0.2, 0.2], "debiased": [0.1, 0.2, 0.3, 0.4]})
    fig = viz.letter_priors(table, gold=2)
    assert [t.name for t in fig.data] == ["observed", "content-free prior", "calibrated", "permutation-debiased"]
    assert list(fig.data[3].y) == [0.1, 0.2, 0.3, 0.4]
    assert list(fig.data[0].x) == ["A", "B", "★ C", "D"]
    with pytest.raises(ValueError, match="at least one"):
        viz.letter_priors(table[["id"]])


def test_pll_subwords_groups_metrics_per_sentence_and_shows_note():
    rows = [{"sentence": s, "metric": m, "position": p + 1, "subword": w, "logprob": -(p + 1) * k}
            for s in ("I ran.", "I runned.") for k, m in enumerate(["original", "word_l2r", "whole_word"], 1)
            for p, w in enumerate(["i", "ran", "."])]
    fig = viz.pll_subwords(pd.DataFrame(rows), note="retrieval head")
    assert len(fig.data) == 6
    assert {t.name for t in fig.data} == {"original", "word_l2r", "whole_word"}
    first = fig.data[1]
    assert list(first.x) == ["1:i", "2:ran", "3:."] and list(first.y) == [-2, -4, -6]
    assert "retrieval head" in fig.layout.title.text
    two = viz.pll_subwords(pd.DataFrame(rows), cols=2)
    assert [t.xaxis for t in two.data] == ["x"] * 3 + ["x2"] * 3  # side by side
    assert two.layout.yaxis2.matches == "y" and two.layout.yaxis.matches is None  # on one y scale
    with pytest.raises(ValueError, match="cols"):
        viz.pll_subwords(pd.DataFrame(rows), cols=0)


def test_accuracy_ci_error_bars_span_the_interval():
    frame = pd.DataFrame({"template": ["t1", "t1", "t2", "t2"], "scorer": ["lm", "dcpmi", "lm", "dcpmi"],
                          "accuracy": [0.5, 0.75, 0.25, 0.5], "ci_low": [0.25, 0.5, 0.0, 0.25],
                          "ci_high": [0.75, 1.0, 0.5, 0.5]})
    fig = viz.accuracy_ci(frame, "template")
    lm = fig.data[0]
    assert lm.name == "lm" and list(lm.x) == ["t1", "t2"] and list(lm.y) == [0.5, 0.25]
    assert list(lm.error_y.array) == [0.25, 0.25] and list(lm.error_y.arrayminus) == [0.25, 0.25]
    assert list(fig.data[1].error_y.array) == [0.25, 0.0]
    with pytest.raises(ValueError, match="missing column"):
        viz.accuracy_ci(frame, "domain_premise")


def test_accuracy_ci_puts_the_chance_label_beside_the_bars_not_over_them():
    # "chance 25%" sat inside the plot at its right edge, over the last bar group
    frame = pd.DataFrame({"run": ["a", "b"], "scorer": ["lm", "lm"], "accuracy": [0.3, 0.9], "ci_low": [0.2, 0.8],
                          "ci_high": [0.4, 1.0]})
    fig = viz.accuracy_ci(frame, "run", chance=0.25)
    (label,) = fig.layout.annotations
    assert label.text == "chance 25%" and label.xref == "paper" and label.x >= 1 and label.xanchor == "left"
    # the right margin holds the whole label (a character is at most 0.62 em wide in the figure's sans-serif font)
    assert fig.layout.margin.r >= label.font.size * 0.62 * len(label.text) + (label.xshift or 0)
    assert fig.layout.shapes[0].y0 == 0.25 and fig.layout.margin.r > viz.accuracy_ci(frame, "run").layout.margin.r


def test_save_html_and_rejects_other_suffixes(tmp_path):
    fig = viz.letter_priors(pd.DataFrame({"id": ["A", "B"], "observed": [0.7, 0.3]}))
    out = viz.save(fig, tmp_path / "x.html")
    assert "plotly" in out.read_text()[:5000].lower()
    with pytest.raises(ValueError, match="path"):
        viz.save(fig, tmp_path / "x.gif")
    with pytest.raises(TypeError, match="fig"):
        viz.save({"data": []}, tmp_path / "x.html")


@pytest.mark.slow
def test_save_png_with_kaleido(tmp_path):
    fig = go.Figure(go.Bar(x=["a"], y=[1]))
    out = viz.save(fig, tmp_path / "x.png", scale=1)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.process
def test_png_exports_after_the_first_reuse_one_renderer(tmp_path):
    # each PNG export took 6-9 s: kaleido started a browser for every image. In a fresh process (a renderer started
    # by an earlier test would hide the cost), the first export starts the renderer and the next ones reuse it.
    script = "\n".join([
        "import sys, time", "import plotly.graph_objects as go", "from surfacelab import viz",
        "fig = go.Figure(go.Bar(x=['a'], y=[1]))",
        "for i in range(3):",
        "    t = time.monotonic()",
        "    viz.save(fig, f'{sys.argv[1]}/x{i}.png', scale=1)",
        "    print(time.monotonic() - t)"])
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    first, *later = [float(line) for line in done.stdout.split()]
    assert all(t < first / 2 for t in later), (first, later)
    assert all((tmp_path / f"x{i}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for i in range(3))


@pytest.mark.process
def test_a_png_without_a_browser_is_refused_at_once_saying_what_to_install(tmp_path):
    # kaleido's renderer waited forever for a browser it could not start: the export (and a kernel) hung
    script = "\n".join([
        "import sys", "import plotly.graph_objects as go", "from surfacelab import viz",
        "fig = go.Figure(go.Bar(x=['a'], y=[1]))",
        "try:", "    viz.save(fig, sys.argv[1] + '/x.png', scale=1)",
        "except RuntimeError as err:", "    print(err)",
        "viz.save(fig, sys.argv[1] + '/x.html')"])
    missing = str(tmp_path / "no-such-chromium")  # where the browser is said to be: found nowhere, on any machine
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "BROWSER_PATH": missing})
    assert done.returncode == 0, done.stderr
    assert f"$BROWSER_PATH={missing!r} is no program" in done.stdout and "apt install chromium" in done.stdout
    assert not (tmp_path / "x.png").exists() and (tmp_path / "x.html").stat().st_size > 0  # HTML needs no browser


def test_figures_use_the_white_template():
    fig = viz.token_heatmap(_tokens())
    assert fig.layout.template.layout.plot_bgcolor == "white"
    assert fig.layout.template.data.heatmap  # trace defaults of the types drawn are kept


def test_text_is_escaped_for_plotly_and_leading_spaces_are_visible():
    assert viz.esc("costs $5 or $10 <b>") == "costs &#36;5 or &#36;10 &lt;b&gt;"  # no LaTeX, no markup
    assert viz.option_label(" $5") == "␣&#36;5"
    forms, concepts, winners = _mass()
    forms = forms.assign(concept=forms["concept"].replace({"tub": "$5 tub", "sink": "$6 sink"}))
    concepts = concepts.assign(concept=["$5 tub", "$6 sink"])
    winners = winners.assign(concept=winners["concept"].replace({"tub": "$5 tub", "sink": "$6 sink"}))
    spec = viz.paraphrase_mass_spec(forms, concepts, winners)
    text = json.dumps(spec, ensure_ascii=False)
    assert "$" not in text.replace("&#36;", "")


def test_specs_are_plain_json_and_figures_match_them():
    table = pd.DataFrame({"id": list("AB"), "option": [" bathtub", " sink"], "observed": [0.7, np.nan]})
    spec = viz.letter_priors_spec(table, gold=0)
    json.dumps(spec, allow_nan=False)  # NaN became null: the browser's JSON.parse accepts it
    assert spec["data"][0]["x"] == ["★ A · ␣bathtub", "B · ␣sink"] and spec["data"][0]["y"] == [0.7, None]
    fig = viz.letter_priors(table, gold=0)
    assert list(fig.data[0].x) == spec["data"][0]["x"]


def test_distinct_rounding_never_prints_two_different_numbers_the_same():
    assert _format.distinct([0.491, 0.494], percent=True) == ["49.1%", "49.4%"]
    assert _format.distinct([0.49, 0.49], percent=True) == ["49%", "49%"]  # equal numbers may print the same
    assert _format.distinct([-1.2345, -1.2341]) == ["-1.2345", "-1.2341"]
    assert _format.gap(0.0031) == "0.003" and _format.gap(1.239) == "1.24" and _format.gap(0.0) == "0.00"
    concepts = pd.DataFrame({"concept": ["tub", "sink"], "share": [0.4941, 0.4937], "n_forms": [3, 1],
                             "best_form": [" bathtub", " sink"], "best_form_logprob": [np.log(0.2), np.log(0.3)],
                             "best_form_share": [0.5, 1.0]})
    winners = pd.DataFrame({"scorer": ["lm", "mass"], "concept": ["sink", "tub"], "form": [" sink", None]})
    text = viz.mass_reading(concepts, winners, answer="tub")
    assert "49.41% of the listed mass against 49.37% for 'sink'" in text


def test_mass_reading_names_the_winning_form_with_its_concept_and_says_what_form_dcpmi_is():
    concepts = pd.DataFrame({"concept": ["an oven", "a pan"], "share": [0.3, 0.7], "n_forms": [2, 2],
                             "best_form": [" the oven", " a pan"], "best_form_logprob": [np.log(0.25), np.log(0.2)],
                             "best_form_share": [0.25 / 0.3, 0.2 / 0.7]})
    winners = pd.DataFrame({"scorer": ["lm", "mass", "dcpmi", "dcpmi_form"],
                            "concept": ["an oven", "a pan", "a pan", "an oven"],
                            "form": [" the oven", None, None, " an oven"]})
    text = viz.mass_reading(concepts, winners, answer="a pan")
    assert text.startswith("best single form: '␣the oven' (concept 'an oven'), the most likely of all the listed "
                           "forms, not only of the options (P(form|premise) = 0.25).")
    assert "concept mass: 'a pan', whose 2 forms hold 70% of the listed mass against 30% for 'an oven'" in text
    assert "concept DC-PMI: 'a pan'" in text and "form DC-PMI: '␣an oven' (concept 'an oven')" in text
    assert ("Form DC-PMI is the DC-PMI of each single form, log P(form|premise) − log P(form|domain premise); "
            "the concept of the best form wins.") in text
    assert "The intended answer, concept 'a pan', wins under concept mass, concept DC-PMI." in text
    assert "LM" not in text.replace("DC-PMI", "")  # no rule reads as the scorer table's LM


def _pll_tokens() -> tuple[pd.DataFrame, pd.DataFrame]:
    # premise "I saw" (5 chars) + options " a cat" and " an aardvark" (aardvark split in two subwords)
    rows = []
    sents = [("I saw a cat", [("i", "I", 0, 1, 1, 0), ("saw", "saw", 2, 5, 1, 0), ("a", "a", 6, 7, 1, 0),
                              ("cat", "cat", 8, 11, 1, 0)]),
             ("I saw an aardvark", [("i", "I", 0, 1, 1, 0), ("saw", "saw", 2, 5, 1, 0), ("an", "an", 6, 8, 1, 0),
                                    ("aard", "aardvark", 9, 13, 2, 0), ("##vark", "aardvark", 13, 17, 2, 1)])]
    for k, m in enumerate(["original", "word_l2r", "whole_word"]):
        for i, (s, toks) in enumerate(sents):
            for p, (sub, word, a, b, n, j) in enumerate(toks):
                rows.append({"sentence_idx": i, "sentence": s, "metric": m, "position": p + 1, "subword": sub,
                             "word": word, "char_start": a, "char_end": b, "n_subwords": n, "subword_idx": j,
                             "logprob": -1.0 - p - (k * 0.5 if n > 1 else 0)})
    tokens = pd.DataFrame(rows)
    table = tokens.groupby(["sentence_idx", "metric"], as_index=False)["logprob"].sum().rename(
        columns={"logprob": "pll"})
    return tokens, table


def test_pll_options_focus_on_the_option_and_name_winners():
    tokens, table = _pll_tokens()
    totals = viz.pll_totals(table, [" a cat", " an aardvark"])
    assert totals["original"].tolist() == [-10.0, -15.0] and totals["winner_original"].tolist() == [True, False]
    spec = viz.pll_options_spec(tokens, premise="I saw", options=[" a cat", " an aardvark"], gold=1, note="caveat")
    first = spec["data"][0]  # option 1, metric original: the premise collapsed, then the option's subwords
    assert first["y"] == [-1.5, -3.0, -4.0] and first["marker"]["opacity"] == [0.35, 1.0, 1.0]
    assert spec["layout"]["xaxis"]["ticktext"] == ["premise (⌀ of 2)", "a", "cat"]
    assert [a["text"] for a in spec["layout"]["annotations"]] == ["␣a cat", "★ ␣an aardvark"]
    assert "caveat" in spec["layout"]["title"]["text"]
    # one y scale: the second panel's axis follows the first (a bar's height compares across options)
    assert "matches" not in spec["layout"]["yaxis"] and spec["layout"]["yaxis2"]["matches"] == "y"
    reading = viz.pll_reading(tokens, totals, premise="I saw")
    assert "Every metric picks '␣a cat'" in reading and "'aardvark'" in reading
    single = tokens[tokens["sentence_idx"] == 0]
    one = viz.pll_totals(table[table["sentence_idx"] == 0], [" a cat"])
    assert "single subwords" in viz.pll_reading(single, one, premise="I saw")


def test_pll_reading_names_the_options_read_as_the_unknown_token():
    tokens, table = _pll_tokens()
    totals = viz.pll_totals(table, [" a cat", " an aardvark"])
    unk, other = 100, 7
    ids = [unk if (w == "cat" or w == "I") else other for w in tokens["word"]]  # the premise's [UNK] is no option's
    reading = viz.pll_reading(tokens.assign(token_id=ids), totals, premise="I saw", unknown_id=unk)
    assert ("Option 1, '␣a cat', has text the masked LM does not know ('cat' read as its unknown token)" in reading
            and "Option 2" not in reading)
    assert "does not know" not in viz.pll_reading(tokens.assign(token_id=other), totals, premise="I saw",
                                                  unknown_id=unk)
    with pytest.raises(ValueError, match="token_id"):
        viz.pll_reading(tokens, totals, premise="I saw", unknown_id=unk)


def test_letters_reading_names_picks_and_the_letter_prior():
    table = pd.DataFrame({"id": list("AB"), "option": ["bathtub", "sink"], "observed": [0.6, 0.4],
                          "prior": [0.7, 0.3], "calibrated": [0.39, 0.61], "debiased": [0.45, 0.55]})
    text = viz.letters_reading(table, orders=2)
    assert text.startswith("Asked for a letter, the model picks A ('bathtub') with 60%")
    assert "still gives A 70%" in text and "Calibrated, the pick is B ('sink')" in text and "2 option orders" in text


def test_accuracy_ci_draws_the_chance_line():
    frame = pd.DataFrame({"template": ["t1"], "scorer": ["lm"], "accuracy": [0.5], "ci_low": [0.3], "ci_high": [0.7]})
    fig = viz.accuracy_ci(frame, "template", chance=0.5)
    assert fig.layout.shapes[0].y0 == 0.5 and "chance 50%" in fig.layout.annotations[0].text
    with pytest.raises(ValueError, match="chance"):
        viz.accuracy_ci(frame, "template", chance=2)
