"""The Workbench under a chat template: its views score the premise and the domain premise rendered alike (the
tokenizer's own ``apply_chat_template`` is the reference), the line under the domain premise shows the strings the
model reads, and the "chat template" box turns it on and off."""

from __future__ import annotations

import html
import json

import numpy as np
import pandas as pd
import pytest

import surfacelab as sl
from surfacelab.chat import ChatTemplate
from surfacelab.widgets.workbench.widget import Workbench
from tiny_models import tiny_causal

TINY = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>\n{% endif %}")
PREMISE, DOMAIN, OPTIONS = "The man took a bath in the", "the", ["bathtub", "soap", "milk"]


def _user(tok, content: str, system: str | None = None) -> str:
    turns = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
    return tok.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)


@pytest.fixture(scope="module")
def chat_lm():
    model, tok = tiny_causal()
    tok.chat_template = TINY
    return sl.load_lm((model, tok), device="cpu")


def _bench(lm, mlm, **kwargs) -> Workbench:
    bench = Workbench(lm=lm, mlm=mlm, live=False, **kwargs)
    bench.premise_box.value, bench.domain_box.value = PREMISE, DOMAIN
    bench.set_options(OPTIONS, gold=0)
    return bench


def test_the_views_score_the_rendered_turns_and_the_line_shows_them(chat_lm, tiny_mlm):
    bench = _bench(chat_lm, tiny_mlm, chat_template=True)
    try:
        assert bench.chat_box.value
        bench.update()
        assert bench.message.value == ""
        tok = chat_lm.tokenizer
        ctx, dom = _user(tok, PREMISE), _user(tok, DOMAIN)
        result = bench.views["scores"].result
        assert (result.premise, result.domain_premise) == (ctx, dom)
        got = sl.logprobs(chat_lm, [(c, o) for c in (ctx, dom) for o in OPTIONS], cache=False)
        n = len(OPTIONS)
        np.testing.assert_allclose(bench.frames()["scores"]["dcpmi"],
                                   [got[k].total - got[k + n].total for k in range(n)], atol=1e-5)
        forms = bench.views["paraphrase"].frames["forms"]  # the paraphrase view reads the same turns
        np.testing.assert_allclose(forms.set_index("form").loc[OPTIONS, "logprob"], [s.total for s in got[:n]],
                                   atol=1e-5)
        line = bench.chat_line.value
        assert f"<pre>{html.escape(ctx)}</pre>" in line and f"<pre>{html.escape(dom)}</pre>" in line
        assert "&lt;assistant&gt;" in bench.rows[0].join.value  # the reads line: the option after the turn
        assert "glued" not in bench.message.value and "sl-glued" not in bench.rows[0]._dom_classes
        assert "No premise map under a chat template" in bench.views["why"].text.value
        bench.chat_box.value = False  # plain text again: the typed strings
        bench.update()
        assert bench.chat_line.value == ""
        plain = sl.score(chat_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, cache=False)
        pd.testing.assert_frame_equal(bench.frames()["scores"].drop(columns="gold"), plain.table, check_exact=False,
                                      atol=1e-5)
    finally:
        bench.close()


def test_a_template_with_a_system_instruction_is_rendered_as_given(chat_lm, tiny_mlm):
    bench = _bench(chat_lm, tiny_mlm, chat_template=ChatTemplate(system_instruction="Be brief."))
    try:
        bench.update()
        result = bench.views["scores"].result
        assert result.premise == _user(chat_lm.tokenizer, PREMISE, "Be brief.")
    finally:
        bench.close()


def test_a_model_without_a_chat_template_is_said_on_the_line_and_in_the_view(tiny_lm, tiny_mlm):
    bench = _bench(tiny_lm, tiny_mlm)
    try:
        assert not bench.chat_box.value and bench.chat_line.value == ""
        bench.chat_box.value = True
        assert "has no chat template" in bench.chat_line.value and "sl-chat-error" in bench.chat_line.value
        bench.update()
        assert "has no chat template" in bench.views["scores"].message
    finally:
        bench.close()


def test_the_chat_line_follows_a_model_picked_after_it(tiny_lm, tiny_mlm, tmp_path):
    model, tok = tiny_causal()
    tok.chat_template = TINY
    folder = tmp_path / "tiny-chat"
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    bench = _bench(tiny_lm, tiny_mlm, chat_template=True)
    try:
        assert "has no chat template" in bench.chat_line.value
        picker = bench.models.lm_picker
        picker.options = [*picker.options, str(folder)]
        picker.value = str(folder)
        bench.update()  # loads the picked model
        assert bench.lm.name == str(folder)
        assert "reads as chat turns" in bench.chat_line.value and "&lt;assistant&gt;" in bench.rows[0].join.value
    finally:
        bench.close()


def test_a_bad_chat_template_argument_is_refused_by_name(tiny_lm, tiny_mlm):
    with pytest.raises(TypeError, match=r"^chat_template: expected True, a template's text or a ChatTemplate, got int"):
        Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, chat_template=3)


def test_the_chat_box_is_saved_in_the_state_and_read_back(chat_lm, tiny_mlm, tmp_path):
    bench = _bench(chat_lm, tiny_mlm, chat_template=True)
    other = _bench(chat_lm, tiny_mlm)
    try:
        path = bench.save_state(tmp_path / "state.json")
        assert json.loads(path.read_text(encoding="utf-8"))["chat_template"] is True
        assert not other.chat_box.value
        other.load_state(path)
        assert other.chat_box.value and other.inputs().chat_template is True
        other.chat_box.value = False
        assert other.state()["chat_template"] is False
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["chat_template"] = "{{ messages }}"  # a template's text from a file is not rendered
        with pytest.raises(ValueError, match=r"chat_template must be true \(the model's own chat template\) or false"):
            other.load_state(doc)
    finally:
        bench.close()
        other.close()


def test_an_item_loaded_as_scored_turns_the_chat_box_off(chat_lm, tiny_mlm):
    bench = _bench(chat_lm, tiny_mlm, chat_template=True)
    try:
        rendered = _user(chat_lm.tokenizer, PREMISE)
        bench.load_item(rendered, OPTIONS, domain_premise=_user(chat_lm.tokenizer, DOMAIN), gold=0)
        assert not bench.chat_box.value and bench.inputs().premise == rendered  # not rendered a second time
    finally:
        bench.close()


def test_an_explorer_run_under_a_chat_template_opens_its_rows_as_scored(chat_lm, tiny_mlm, tmp_path):
    from surfacelab.widgets.explorer.widget import Explorer

    bench = Workbench(lm=chat_lm, mlm=tiny_mlm, live=False)
    ex = Explorer(chat_lm, workbench=bench, task="copa", split="val", n=3, chunk=5, folder=tmp_path,
                  chat_template=True)
    try:
        run = ex.run()
        assert run is not None and ex.wait(300) and run.error is None
        res = ex.runs["paper"]
        task = sl.tasks.load("copa", "val", limit=3)
        tok = chat_lm.tokenizer
        assert res.meta["chat_template"]["template"] == TINY
        k = next(i for i, it in enumerate(task.items) if it.premise_per_option is None)  # one premise per item
        it = task.items[k]
        assert set(res.scores.loc[res.scores["item"] == k, "context"]) == {_user(tok, it.premise)}
        ex.opener.open_item(k)
        bench.wait()
        # the workbench holds the strings the run scored (its own chat box stays off: nothing is rendered twice)
        assert bench.premise_box.value == _user(tok, it.premise) and not bench.chat_box.value
        assert bench.domain_box.value == _user(tok, it.domain_premise)
        bench.update()
        np.testing.assert_allclose(bench.frames()["scores"]["dcpmi"],
                                   res.scores.loc[res.scores["item"] == k, "dcpmi"], atol=1e-5)
    finally:
        ex.close()
        bench.close()
