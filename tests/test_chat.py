"""Chat templates (``surfacelab.chat``): ``score``, ``evaluate`` and ``from_log`` render the premise and the domain
premise alike, as lm-evaluation-harness 0.4.13 renders a request with ``--apply_chat_template``.

Every expected string is rendered in the test by the tokenizer's own ``apply_chat_template`` (or read from the chat
logs lm-eval itself wrote, ``tests/logs/lm_eval_chat``), every expected number scored by ``sl.logprobs`` on those
strings or read from the log with plain ``json``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from lm_eval.api.utils import maybe_delimit

import surfacelab as sl
from surfacelab import chat, cli, text
from surfacelab.chat import ChatTemplate
from surfacelab.tasks.render import render_item
from tiny_models import tiny_causal

#: A short template (the tiny model's window is 64 tokens), written as chat templates are.
TINY = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<assistant>\n{% endif %}")
PREMISE, OPTIONS, DOMAIN = "The man took a bath in the", ["bathtub", "sink"], "the"
CHAT_LOGS = Path(__file__).parent / "logs" / "lm_eval_chat"
ZERO = next((CHAT_LOGS / "zero_shot").iterdir())
FEW = next((CHAT_LOGS / "fewshot_system").iterdir())
INSTRUCTION = "You are a careful science tutor. Answer the multiple choice question."


def _records(folder: Path, task: str) -> list[dict]:
    path = next(folder.glob(f"samples_{task}_*.jsonl"))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def _results(folder: Path) -> dict:
    return json.loads(next(folder.glob("results_*.json")).read_text(encoding="utf-8"))


def _user(tok, content: str, system: str | None = None, template: str | None = None) -> str:
    """The tokenizer's own rendering of one user turn (after a system turn), with the generation prompt."""
    turns = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": content}]
    return tok.apply_chat_template(turns, chat_template=template, tokenize=False, add_generation_prompt=True)


@pytest.fixture(scope="module")
def chat_lm():
    """The tiny causal LM with a chat template of its own."""
    model, tok = tiny_causal()
    tok.chat_template = TINY
    return sl.load_lm((model, tok), device="cpu")


# --- score --------------------------------------------------------------------------------------------------

def test_chat_templated_dcpmi_equals_an_independent_rendering(chat_lm):
    r = sl.score(chat_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, chat_template=True, cache=False)
    tok = chat_lm.tokenizer
    ctx, dom = _user(tok, PREMISE), _user(tok, DOMAIN)
    assert (r.premise, r.domain_premise) == (ctx, dom)
    got = sl.logprobs(chat_lm, [(ctx, o) for o in OPTIONS] + [(dom, o) for o in OPTIONS], cache=False)
    lm, prior = np.array([s.total for s in got[:2]]), np.array([s.total for s in got[2:]])
    np.testing.assert_allclose(r.table["logprob"], lm, atol=1e-5)
    np.testing.assert_allclose(r.table["dcpmi"], lm - prior, atol=1e-5)
    plain = sl.score(chat_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, cache=False)
    assert not np.allclose(plain.table["dcpmi"], r.table["dcpmi"])  # the template changed what was scored
    assert r.meta["chat_template"]["sha"] == hashlib.sha256(TINY.encode()).hexdigest()
    assert r.meta["chat_user"] == {"premise": PREMISE, "domain_premise": DOMAIN}
    assert f"domain premise {DOMAIN!r} as a chat turn" in r.explain() or "wins under both" in r.explain()


def test_a_template_string_and_a_system_instruction_render_as_given(chat_lm):
    other = TINY.replace("<{{ m['role'] }}>", "[{{ m['role'] }}] ")
    r = sl.score(chat_lm, PREMISE, OPTIONS, domain_premise=DOMAIN, cache=False,
                 chat_template=ChatTemplate(other, system_instruction="Be brief."))
    tok = chat_lm.tokenizer
    assert r.premise == _user(tok, PREMISE, "Be brief.", other)
    assert r.domain_premise == _user(tok, DOMAIN, "Be brief.", other)


def test_a_tokenizer_without_a_chat_template_is_refused_naming_the_argument(tiny_lm):
    with pytest.raises(ValueError, match=r"^chat_template: the tokenizer of .* has no chat template"):
        sl.score(tiny_lm, PREMISE, OPTIONS, chat_template=True)
    with pytest.raises(ValueError, match=r"^chat_template: the tokenizer of .* has no chat template"):
        sl.evaluate(tiny_lm, sl.tasks.load("copa", "val", limit=2), "lm", chat_template=True, progress=False)


@pytest.mark.parametrize(("value", "exc", "message"), [
    ("just words", ValueError, r"^chat_template: 'just words' is neither a Jinja chat template"),
    ("{% for m in messages %}{{ m['content'] }", ValueError, r"^chat_template: the chat template does not render a "
                                                             r"user turn: TemplateSyntaxError"),
    ("{{ raise_exception('no users here') }}", ValueError, r"^chat_template: .*no users here"),
    (5, TypeError, r"^chat_template: expected True, a template's text or a ChatTemplate, got int"),
    (ChatTemplate(system_instruction=3), TypeError, r"^chat_template.system_instruction: expected a string"),
    (ChatTemplate(fewshot_as_multiturn="yes"), TypeError, r"^chat_template.fewshot_as_multiturn: expected True"),
])
def test_a_bad_chat_template_is_refused_naming_the_argument(chat_lm, value, exc, message):
    with pytest.raises(exc, match=message):
        sl.score(chat_lm, PREMISE, OPTIONS, chat_template=value)


@pytest.mark.parametrize(("instruction", "description"), [
    ("Be brief.", "About physics."), ("Be brief.\n", "About physics."), ("Be brief.", " about physics"),
    (None, "About physics.\n\n"), ("Be brief.", ""), (None, ""),
])
def test_the_system_turn_joins_instruction_and_description_as_lm_eval_does(instruction, description):
    assert chat.system_turn(ChatTemplate(TINY, instruction), description) == maybe_delimit(instruction, description,
                                                                                           "\n\n")


def test_a_template_that_refuses_a_system_turn_renders_without_it_with_a_warning(chat_lm):
    strict = ("{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}"
              "{% endif %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}<assistant>\n"
              "{% endif %}")
    with pytest.warns(UserWarning, match="refuses a system turn.*System role not supported.*as lm-eval does"):
        r = sl.score(chat_lm, PREMISE, OPTIONS, cache=False, chat_template=ChatTemplate(strict, "Be brief."))
    assert r.premise == _user(chat_lm.tokenizer, PREMISE, template=strict)


def test_a_template_that_writes_bos_gets_no_second_one():
    from tokenizers import processors

    model, tok = tiny_causal()
    bos = tok.bos_token_id
    tok._tokenizer.post_processor = processors.TemplateProcessing(single="<|endoftext|> $A",
                                                                  special_tokens=[("<|endoftext|>", bos)])
    tok.chat_template = "{{ bos_token }}" + TINY
    lm = sl.load_lm((model, tok), device="cpu")
    assert lm.add_bos
    r = sl.score(lm, PREMISE, OPTIONS, chat_template=True, cache=False)
    assert r.premise.startswith("<|endoftext|><user>")
    for ids in (text.encode(lm, r.premise, OPTIONS[0]).input_ids, text.encode_prompt(lm, r.premise)):
        assert ids[0] == bos and ids[1] != bos  # lm-eval adds no BOS to a string that starts with it
    assert text.encode(lm, PREMISE, " x").input_ids[:1] == (bos,)  # a plain context still gets its BOS
    assert text.encode_prompt(lm, "x")[:1] == (bos,)


# --- evaluate -----------------------------------------------------------------------------------------------

def test_evaluate_renders_every_item_and_scores_options_without_the_target_delimiter(chat_lm):
    task = sl.tasks.load("arc-challenge", limit=3, variant="lm-eval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny model's window cuts the contexts
        res = sl.evaluate(chat_lm, task, "lm,per_char,dcpmi", chat_template=True, progress=False, n_boot=0)
    tok = chat_lm.tokenizer
    for k, it in enumerate(task.items):
        rows = res.scores[res.scores["item"] == k]
        assert set(rows["context"]) == {_user(tok, it.premise)}
        choices = it.meta["fields"]["choices"]
        assert rows["option"].tolist() == choices  # lm-eval drops the target delimiter under a chat template
        assert rows["n_chars"].tolist() == [len(c) for c in choices]
        assert res.items.loc[k, "premise"] == it.premise  # as the template family rendered it, for the table
        assert res.items.loc[k, "domain_context"] == _user(tok, it.domain_premise)
        one = res.result(k)
        assert (one.premise, one.domain_premise) == (_user(tok, it.premise), _user(tok, it.domain_premise))
    assert res.meta["chat_template"]["template"] == TINY


def test_few_shot_examples_are_turns_of_their_own_or_written_out(chat_lm):
    task = sl.tasks.fewshot(sl.tasks.load("copa", "val", limit=2, variant="lm-eval"), 1)
    it, tpl = task.items[0], task.template
    shot = it.meta["shot_fields"][0]
    answer = tpl.render_options(shot)[tpl.gold_index(shot)].removeprefix(tpl.target_delimiter)
    multi = chat.render_item(chat_lm, chat.resolve(chat_lm, True), it, tpl)
    tok = chat_lm.tokenizer
    turns = [{"role": "user", "content": tpl.render_body(shot)}, {"role": "assistant", "content": answer},
             {"role": "user", "content": tpl.render_body(it.meta["fields"])}]
    assert multi.premise == tok.apply_chat_template(turns, tokenize=False, add_generation_prompt=True)
    assert multi.domain_premise == _user(tok, it.domain_premise)  # a domain premise has no examples
    single = chat.render_item(chat_lm, chat.resolve(chat_lm, ChatTemplate(fewshot_as_multiturn=False)), it, tpl)
    assert single.premise == _user(tok, it.meta["fewshot_prefix"] + tpl.render_body(it.meta["fields"]))


# --- logs ---------------------------------------------------------------------------------------------------

def test_a_logs_template_is_rendered_only_when_it_is_the_models_own(tiny_lm, chat_lm):
    logged = _results(ZERO)["chat_template"]
    for lm in (tiny_lm, chat_lm):
        with pytest.raises(ValueError, match=r"^chat_template: the log was rendered through a chat template \(sha256 "
                                             r"872be49dbb63\) that is not the tokenizer's own"):
            sl.from_lm_eval(ZERO, lm=lm, domain_premise="Answer:", progress=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # another model than the log's, cut to its window: not the log's numbers
        res = sl.from_lm_eval(ZERO, lm=chat_lm, domain_premise="Answer:", chat_template=logged, progress=False)
    assert set(res.items["domain_context"]) == {_user(chat_lm.tokenizer, "Answer:", template=logged)}
    assert res.meta["chat_template"]["sha"] == _results(ZERO)["chat_template_sha"]


def test_chat_template_on_a_log_is_refused_where_it_means_nothing(tiny_lm, tmp_path):
    with pytest.raises(ValueError, match=r"^chat_template: it renders the domain premise of a log"):
        sl.from_lm_eval(ZERO, lm=tiny_lm, chat_template=True)
    plain = tmp_path / "plain"
    shutil.copytree(ZERO, plain)
    results = next(plain.glob("results_*.json"))
    doc = json.loads(results.read_text())
    doc["chat_template"] = None
    results.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"^chat_template: the log's prompts are plain text"):
        sl.from_lm_eval(plain, lm=tiny_lm, domain_premise="Answer:", chat_template=True)


def test_a_log_whose_contexts_do_not_match_its_system_turn_is_refused(chat_lm, tmp_path):
    edited = tmp_path / "edited"
    shutil.copytree(ZERO, edited)
    results = next(edited.glob("results_*.json"))
    doc = json.loads(results.read_text())
    doc["system_instruction"] = "Something the run never said."
    results.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"^chat_template: the logged context of doc_id 0 does not start and end as"):
        sl.from_lm_eval(edited, lm=chat_lm, domain_premise="Answer:", chat_template=doc["chat_template"])


# --- command line -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chat_dir(tmp_path_factory) -> str:
    """The tiny causal LM with its chat template, saved as a model folder that ``--model`` loads."""
    model, tok = tiny_causal()
    tok.chat_template = TINY
    folder = tmp_path_factory.mktemp("tiny-chat")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def flat(text: str) -> str:
    """The output as one line: a header is wrapped to the terminal's width."""
    return " ".join(text.split())


def _cli(capsys, argv: list[str]) -> tuple[int, str, str]:
    capsys.readouterr()  # what came before (a model folder's saving)
    rc = cli.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_score_with_chat_template_scores_the_tokenizers_rendering(chat_dir, chat_lm, capsys):
    argv = ["score", "--premise", PREMISE, "--option", OPTIONS[0], "--option", OPTIONS[1], "--domain", DOMAIN,
            "--model", chat_dir, "--chat-template"]
    rc, out, err = _cli(capsys, argv + ["--format", "json"])
    assert rc == 0, err
    doc = json.loads(out)
    tok = chat_lm.tokenizer
    assert (doc["premise"], doc["domain_premise"]) == (_user(tok, PREMISE), _user(tok, DOMAIN))
    got = sl.logprobs(chat_lm, [(_user(tok, c), o) for c in (PREMISE, DOMAIN) for o in OPTIONS], cache=False)
    np.testing.assert_allclose([r["dcpmi"] for r in doc["options"]],
                               [got[k].total - got[k + 2].total for k in range(2)], atol=1e-5)
    rc, out, err = _cli(capsys, argv)
    assert rc == 0 and "as chat turns (template sha256 " + hashlib.sha256(TINY.encode()).hexdigest()[:12] in out


def test_cli_eval_renders_a_template_file_with_a_system_instruction(chat_dir, chat_lm, capsys, tmp_path):
    other = tmp_path / "other.jinja"
    other.write_text(TINY.replace("<{{ m['role'] }}>", "[{{ m['role'] }}] "), encoding="utf-8")
    task = sl.tasks.load("copa", "val", limit=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc, _, err = _cli(capsys, ["eval", "--task", "copa", "--split", "val", "--limit", "2", "--model", chat_dir,
                                   "--scorers", "lm,dcpmi", "--no-progress", "--out", str(tmp_path / "items.csv"),
                                   "--save-dir", str(tmp_path / "run"), "--chat-template", str(other),
                                   "--system-instruction", "Be brief."])
    assert rc == 0, err
    res = sl.EvalResult.load(tmp_path / "run")
    tok = chat_lm.tokenizer
    for k, it in enumerate(task.items):
        expected = [_user(tok, p, "Be brief.", other.read_text()) for p in it.premise_per_option] \
            if it.premise_per_option else [_user(tok, it.premise, "Be brief.", other.read_text())] * len(it.options)
        assert res.scores.loc[res.scores["item"] == k, "context"].tolist() == expected


def test_cli_eval_from_a_chat_log_renders_the_domain_premise_with_the_template_named(chat_dir, chat_lm, capsys,
                                                                                    tmp_path):
    logged = tmp_path / "logged.jinja"
    logged.write_text(_results(ZERO)["chat_template"], encoding="utf-8")
    argv = ["eval", "--from-log", str(ZERO), "--model", chat_dir, "--domain", "Answer:", "--no-progress",
            "--out", str(tmp_path / "items.csv"), "--save-dir", str(tmp_path / "run")]
    rc, out, err = _cli(capsys, argv)  # the log's template is not the tiny model's own: refused, naming the flag
    assert rc == 2 and err.strip().endswith("(on the command line: --chat-template FILE) to render with it"), err
    rc, out, err = _cli(capsys, argv + ["--chat-template", str(logged)])
    assert rc == 0, err
    assert "domain premise as a chat turn (template sha256 " + _results(ZERO)["chat_template_sha"][:12] in flat(out)
    res = sl.EvalResult.load(tmp_path / "run")
    assert set(res.items["domain_context"]) == {_user(chat_lm.tokenizer, "Answer:", template=logged.read_text())}


@pytest.mark.parametrize(("argv", "message"), [
    (["--model", "{tiny}", "--chat-template"], "surfacelab score: error: --chat-template: the tokenizer of "),
    (["--model", "{chat}", "--system-instruction", "Be brief."],
     "surfacelab score: error: --system-instruction: only with --chat-template"),
    (["--model", "{chat}", "--chat-template", "{missing}"], "surfacelab score: error: --chat-template: '"),
    (["--model", "{chat}", "--chat-template", "{words}"], "surfacelab score: error: --chat-template: 'just words' is "
                                                           "neither a Jinja chat template"),
    (["--model", "{chat}", "--chat-template", "--system-instruction", "\udcff"],
     "surfacelab score: error: --system-instruction: "),
])
def test_cli_chat_flags_refuse_bad_values_in_one_line(argv, message, chat_dir, capsys, tmp_path):
    tiny = tmp_path / "tiny"
    model, tok = tiny_causal()
    model.save_pretrained(tiny)
    tok.save_pretrained(tiny)
    (tmp_path / "words.jinja").write_text("just words", encoding="utf-8")
    names = {"tiny": str(tiny), "chat": chat_dir, "missing": str(tmp_path / "no.jinja"),
             "words": str(tmp_path / "words.jinja")}
    argv = [a.format(**names) if a.startswith("{") else a for a in argv]
    rc, out, err = _cli(capsys, ["score", "--premise", PREMISE, "--option", " a", "--option", " b", *argv])
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(message), err


# --- the packaged instruct model (SmolLM2-135M-Instruct) ------------------------------------------------------

@pytest.mark.slow
def test_the_default_models_chat_templated_dcpmi_equals_its_tokenizers_rendering(real_lm):
    options = ["bathtub", "xylophone"]
    r = sl.score(real_lm, PREMISE, options, domain_premise=DOMAIN, chat_template=True, cache=False)
    tok = real_lm.tokenizer
    ctx, dom = _user(tok, PREMISE), _user(tok, DOMAIN)
    assert (r.premise, r.domain_premise) == (ctx, dom)
    assert ctx.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")  # the template's default
    got = sl.logprobs(real_lm, [(ctx, o) for o in options] + [(dom, o) for o in options], cache=False)
    expected = np.array([got[i].total - got[i + 2].total for i in range(2)])
    np.testing.assert_allclose(r.table["dcpmi"], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_evaluate_under_the_chat_template_writes_the_prompts_lm_eval_wrote(real_lm):
    log = _records(ZERO, "arc_local")
    task = sl.tasks.load("arc-challenge", source="tests/lm_eval_logs/tasks/arc_local.jsonl", variant="lm-eval",
                         limit=len(log))
    res = sl.evaluate(real_lm, task, "lm,per_char", chat_template=True, progress=False, n_boot=0)
    args = [rec["arguments"][f"gen_args_{k}"] for rec in log for k in range(len(rec["arguments"]))]
    assert res.scores["context"].tolist() == [a["arg_0"] for a in args]
    assert res.scores["option"].tolist() == [a["arg_1"] for a in args]
    logged = [float(rec["filtered_resps"][k][0]) for rec in log for k in range(len(rec["filtered_resps"]))]
    np.testing.assert_allclose(res.scores["logprob"], logged, rtol=1e-5, atol=1e-5)
    assert res.items["correct_lm"].tolist() == [rec["acc"] == 1.0 for rec in log]
    assert res.items["correct_per_char"].tolist() == [rec["acc_norm"] == 1.0 for rec in log]


@pytest.mark.slow
def test_system_instruction_description_and_multiturn_shots_render_as_lm_eval_rendered_mmlu(real_lm):
    log = _records(FEW, "mmlu_management")
    full = sl.tasks.load("mmlu", "test", variant="lm-eval")
    test = [it for it in full if it.meta["fields"]["subject"] == "management"]
    dev = [it for it in sl.tasks.load("mmlu", "dev", variant="lm-eval") if it.meta["fields"]["subject"] == "management"]
    template = full.template
    spec = chat.resolve(real_lm, ChatTemplate(system_instruction=INSTRUCTION))
    for rec, it in zip(log, test):
        shots = render_item(it.id, {**it.meta, "shot_fields": [d.meta["fields"] for d in dev[:2]]}, template)
        rendered = chat.render_item(real_lm, spec, shots, template)
        assert rendered.premise == rec["arguments"]["gen_args_0"]["arg_0"]
        assert rendered.options == [rec["arguments"][f"gen_args_{k}"]["arg_1"] for k in range(4)]


@pytest.mark.slow
def test_a_chat_log_rescored_under_a_domain_premise_uses_the_logs_template(real_lm):
    res = sl.from_lm_eval(ZERO, lm=real_lm, domain_premise="Answer:", progress=False)
    log = _records(ZERO, "arc_local")
    logged = np.array([float(rec["filtered_resps"][k][0]) for rec in log for k in range(len(rec["filtered_resps"]))])
    np.testing.assert_allclose(res.scores["surfacelab_logprob"], logged, rtol=1e-5, atol=1e-5)  # LM, as logged
    assert res.scores["logprob"].tolist() == logged.tolist()
    dom = _user(real_lm.tokenizer, "Answer:", template=_results(ZERO)["chat_template"])
    assert set(res.items["domain_context"]) == {dom}
    options = res.scores["option"].tolist()
    prior = np.array([s.total for s in sl.logprobs(real_lm, [(dom, o) for o in options], cache=False)])
    # fp32 batching noise of ~250-token contexts: up to ~3e-5 nats (a plain domain premise is nats away)
    np.testing.assert_allclose(res.scores["dcpmi"], logged - prior, rtol=1e-5, atol=1e-4)
    few = sl.from_lm_eval(FEW, task="mmlu_management", lm=real_lm, domain_premise="Answer:", progress=False)
    description = _results(FEW)["configs"]["mmlu_management"]["description"]
    assert set(few.items["domain_context"]) == {_user(real_lm.tokenizer, "Answer:", INSTRUCTION + "\n\n" + description)}
    assert few.meta["logprob_check"]["agrees"]


def test_a_plain_domain_premise_glued_to_a_chat_logs_options_is_said(tiny_lm):
    with pytest.warns(UserWarning, match=r"options have no leading space: under the domain premise they are glued to "
                                         r"its last word \('…Answer:"):
        res = sl.from_lm_eval(ZERO, lm=tiny_lm, domain_premise="Answer:", chat_template=False, progress=False)
    assert "domain_context" not in res.items
    assert any("glued to its last word" in n for n in sl.logs.log_notes(res.meta))
    with warnings.catch_warnings(record=True) as caught:  # the tiny model is not the log's: those warnings stay
        warnings.simplefilter("always")
        spaced = sl.from_lm_eval(ZERO, lm=tiny_lm, domain_premise="Answer: ", chat_template=False, progress=False)
    assert caught and not any("glued" in str(w.message) for w in caught)
    assert not any("glued" in n for n in sl.logs.log_notes(spaced.meta))
