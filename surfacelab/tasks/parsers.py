"""Per-task record parsers: one raw record -> the *fields* a template renders (see :mod:`surfacelab.tasks.core`).

Each parser recognises the record shapes by their keys, so the same task reads the data/eval JSON Lines files,
the original release files and the Hugging Face hub shapes where noted; a missing or bad field raises
``KeyError`` / ``ValueError`` that :func:`surfacelab.tasks.load` turns into a message naming the file and line.
:mod:`surfacelab.tasks.registry` pairs each parser with its templates.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from .core import Fields, LETTERS




def _lc_first(s: str) -> str:
    return s[:1].lower() + s[1:]


def _label_index(labels: list[str], key: str, what: str) -> int:
    if key not in labels:
        raise KeyError(f"{what}={key!r} is not one of the choice labels {labels}")
    return labels.index(key)


def parse_copa(r: dict[str, Any]) -> Fields:
    q = r["question"] if "question" in r else r["asks-for"]
    if q not in ("cause", "effect"):
        raise KeyError(f"question={q!r} (expected 'cause' or 'effect')")
    p = r["premise"]
    label = int(r["label"]) if "label" in r else int(r["most-plausible-alternative"]) - 1
    return {
        "premise": p,
        "premise_trim": p[:-1],  # the code drops the final period before the bridge
        "premise_lc": _lc_first(p),
        "question": q,
        "bridge": " so" if q == "effect" else " because",
        "flip_bridge": " because" if q == "effect" else " so",
        "choices": [r["choice1"], r["choice2"]],
        "label": label,
    }


def parse_storycloze(r: dict[str, Any]) -> Fields:
    if "InputSentence1" in r:
        sents = [r[f"InputSentence{i}"] for i in range(1, 5)]
        choices = [r["RandomFifthSentenceQuiz1"], r["RandomFifthSentenceQuiz2"]]
        label = int(r["AnswerRightEnding"]) - 1
    else:  # hub shape (e.g. story_cloze): input_sentence_1.., sentence_quiz1/2, answer_right_ending
        sents = [r[f"input_sentence_{i}"] for i in range(1, 5)]
        choices = [r["sentence_quiz1"], r["sentence_quiz2"]]
        label = int(r["answer_right_ending"]) - 1
    story = " ".join(sents)
    # The code moves a final '.'/'!' off and back on; a story ending in anything else gets '.'.
    if not story or story[-1] not in "!.":
        story = story + "."
    return {"story": story, **{f"sentence{i + 1}": s for i, s in enumerate(sents)}, "choices": choices, "label": label}


def _mc_from_letters(r: dict[str, Any], question_key: str, answer_key: str) -> Fields:
    letters = [L for L in LETTERS if L in r]
    choices = [str(r[L]) for L in letters]
    return {"stem": r[question_key], "choices": choices, "label": _label_index(letters, str(r[answer_key]), answer_key)}


def parse_arc(r: dict[str, Any]) -> Fields:
    q = r["question"]
    if isinstance(q, dict):  # AI2 release shape
        ch = q["choices"]
        labels = [str(c["label"]) for c in ch]
        return {"stem": q["stem"], "choices": [c["text"] for c in ch],
                "label": _label_index(labels, str(r["answerKey"]), "answerKey")}
    if "choices" in r and isinstance(r["choices"], dict):  # hub shape (allenai/ai2_arc)
        labels = [str(x) for x in r["choices"]["label"]]
        return {"stem": q, "choices": list(r["choices"]["text"]),
                "label": _label_index(labels, str(r["answerKey"]), "answerKey")}
    return _mc_from_letters(r, "question", "answer")  # PriDe shape: question, A..D, answer


def parse_obqa(r: dict[str, Any]) -> Fields:
    if "query" in r:  # data/eval shape (llm-foundry + AI2 ids)
        return {"stem": r["query"], "choices": list(r["choices"]), "label": int(r["gold"])}
    if "question_stem" in r:  # hub shape (allenai/openbookqa)
        labels = [str(x) for x in r["choices"]["label"]]
        return {"stem": r["question_stem"], "choices": list(r["choices"]["text"]),
                "label": _label_index(labels, str(r["answerKey"]).strip(), "answerKey")}
    return parse_arc(r)  # AI2 release shape


def parse_mmlu(r: dict[str, Any]) -> Fields:
    if isinstance(r.get("choices"), list):  # hub shape (cais/mmlu): choices list, answer index
        choices = [str(c) for c in r["choices"]]
        answer = int(r["answer"])
        if not 0 <= answer < len(choices):
            raise KeyError(f"answer={answer} is not an index into {len(choices)} choices")
        return {"stem": r["question"], "choices": choices, "label": answer, "subject": r.get("subject", "")}
    f = _mc_from_letters(r, "question", "answer")
    f["subject"] = r.get("subject", "")
    return f


def parse_cqa(r: dict[str, Any]) -> Fields:
    q = r["question"]
    if isinstance(q, dict):  # original release shape
        ch = q["choices"]
        labels = [str(c["label"]) for c in ch]
        f = {"stem": q["stem"], "choices": [c["text"] for c in ch],
             "label": _label_index(labels, str(r["answerKey"]), "answerKey")}
    elif "choices" in r and isinstance(r["choices"], dict):  # hub shape (tau/commonsense_qa)
        labels = [str(x) for x in r["choices"]["label"]]
        f = {"stem": q, "choices": list(r["choices"]["text"]),
             "label": _label_index(labels, str(r["answerKey"]), "answerKey")}
    else:  # PriDe shape: question, A..E, answer
        f = _mc_from_letters(r, "question", "answer")
    stem = f["stem"]
    # The code trims one final '?', '.' or '!' and then adds '?' (a stem without one keeps its end).
    f["stem_trim"] = stem[:-1] if stem and stem[-1] in "?.!" else stem
    return f


def _boolq_question(q: str) -> str:
    """The code's question clean-up: capitalise the first letter, ' i ' -> ' I ', add '?'."""
    q = q[:1].upper() + q[1:]
    return q.replace(" i ", " I ") + "?"


def parse_boolq(r: dict[str, Any]) -> Fields:
    if "query" in r:  # data/eval shape: "Passage: <p>\nQuestion: <q>?"
        query = r["query"]
        cut = query.rfind("\nQuestion: ")
        if cut < 0:
            raise KeyError("query does not contain '\\nQuestion: '")
        passage = query[:cut]
        passage = passage[len("Passage: "):] if passage.startswith("Passage: ") else passage
        question = query[cut + len("\nQuestion: "):]
        question = question[:-1] if question.endswith("?") else question
        answer = int(r["gold"]) == 1 if "gold" in r else bool(r["answer"])
        title = r.get("title")
    elif "answer" in r:  # original / google/boolq shape: question, passage, answer (bool), title (original only)
        question, passage, title = r["question"], r.get("passage", ""), r.get("title")
        answer = r["answer"] if isinstance(r["answer"], bool) else str(r["answer"]).lower() in ("true", "1")
    else:  # super_glue shape (the harness's): question, passage, label (1 = true)
        question, passage, title = r["question"], r["passage"], None
        answer = int(r["label"]) == 1
    return {
        "question": question,
        "question_proc": _boolq_question(question),
        "passage": passage,
        "title": title,
        "answer": bool(answer),
        "label": 0 if answer else 1,  # options are [' yes', ' no']
    }


def parse_rte(r: dict[str, Any]) -> Fields:
    lab = r["label"]
    label = (0 if lab == "entailment" else 1) if isinstance(lab, str) else int(lab)
    if isinstance(lab, str) and lab not in ("entailment", "not_entailment"):
        raise KeyError(f"label={lab!r} (expected 'entailment' or 'not_entailment')")
    if "sentence1" in r:  # GLUE shape: sentence1, sentence2
        return {"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": label}
    return {"premise": r["premise"], "hypothesis": r["hypothesis"], "label": label}


CB_LABELS = ["entailment", "contradiction", "neutral"]


def parse_cb(r: dict[str, Any]) -> Fields:
    lab = r["label"]
    if isinstance(lab, str):
        label = _label_index(CB_LABELS, lab, "label")
    else:
        label = int(lab)
    return {"premise": r["premise"], "hypothesis": r["hypothesis"], "label": label}


def parse_sst2(r: dict[str, Any]) -> Fields:
    label = int(r["label"])
    if label not in (0, 1):
        raise KeyError(f"label={label} (SST-2 labels are 0/1)")
    return {"sentence": r["sentence"], "label": label}


def parse_sst5(r: dict[str, Any]) -> Fields:
    label = int(r["label"])
    if not 1 <= label <= 5:
        raise KeyError(f"label={label} (SST-5 labels are 1..5)")
    return {"sentence": r["sentence"], "label": label - 1}


def parse_agn(r: dict[str, Any]) -> Fields:
    label = int(r["Class Index"]) - 1
    if not 0 <= label <= 3:
        raise KeyError(f"Class Index={label + 1} (expected 1..4)")
    return {"title": r["Title"], "description": r["Description"], "label": label}


TREC_LABELS = ["DESC", "ENTY", "LOC", "NUM", "ABBR", "HUM"]


# Detokenisation rules for the tokenised TREC questions, in the order the paper's code applies them.
_DETOK_REPLACE = [
    ("`` ", '"'), (" ''", '"'), ("` ", '"'), (" ' ", '" '), ("s '", "s'"),
]


_DETOK_REPLACE_2 = [
    (" @-@ ", "-"), (" @,@ ", ","), (" @.@ ", "."),
    (" :", ":"), (" ;", ";"), (" .", "."), (" !", "!"), (" ?", "?"), (" ,", ","),
]


_DETOK_BRACKETS = [
    (re.compile(r"\(\s*([^\)]*?)\s*\)"), r"(\1)"),
    (re.compile(r"\[\s*([^\]]*?)\s*\]"), r"[\1]"),
    (re.compile(r"{\s*([^}]*?)\s*}"), r"{\1}"),
]


_DETOK_REPLACE_3 = [
    ("= = = =", "===="), ("= = =", "==="), ("= =", "=="), (" \u00b0 ", "\u00b0"),
    (" \n", "\n"), ("\n ", "\n"), (" N ", " 1 "), (" 's", "'s"),
    (" n't ", "n't "), (" 'd ", "'d "), (" 'm ", "'m "), (" 're ", "'re "), (" 've ", "'ve "),
]


def detokenize(text: str) -> str:
    """Undo PTB-style tokenisation the way the paper's TREC loader does."""
    for a, b in _DETOK_REPLACE:
        text = text.replace(a, b)
    text = re.sub(r"/' [0-9]/", r"/'[0-9]/", text)
    for a, b in _DETOK_REPLACE_2:
        text = text.replace(a, b)
    for pat, rep in _DETOK_BRACKETS:
        text = pat.sub(rep, text)
    for a, b in _DETOK_REPLACE_3:
        text = text.replace(a, b)
    return text


def parse_trec(r: dict[str, Any]) -> Fields:
    coarse = r["coarse_label"] if "coarse_label" in r else str(r["label"]).split(":")[0]
    if isinstance(coarse, int):
        label = coarse
    else:
        label = _label_index(TREC_LABELS, coarse, "coarse_label")
    return {"question": detokenize(r["text"]).strip(), "text": r["text"], "coarse_label": TREC_LABELS[label],
            "label": label}


def parse_hellaswag(r: dict[str, Any]) -> Fields:
    ctx = r["ctx"].strip()
    label = r["label"]
    label = int(label) if str(label).strip() != "" else -1
    endings = list(r["endings"])
    if not 0 <= label < len(endings):
        raise KeyError(f"label={r['label']!r} (no gold label; the hub's test split is unlabelled)")
    # The code's domain premise: from the last space of the context to its end (with the space).
    # (With no space at all, rfind gives -1 and the code takes the last character.)
    return {"ctx": ctx, "last_word": ctx[ctx.rfind(" "):], "choices": endings, "label": label,
            "activity_label": r.get("activity_label", ""), "ctx_a": r.get("ctx_a"), "ctx_b": r.get("ctx_b")}


RACE_LETTERS = "ABCDEF"


def explode_race(r: dict[str, Any]) -> list[dict[str, Any]]:
    """Original RACE files hold one article with lists of questions; split them into hub-shaped records.

    (Records in the EleutherAI/race shape, one article with ``problems``, stay whole: see :func:`parse_race`.)
    """
    if "questions" not in r:
        return [r]
    return [{"article": r["article"], "question": q, "options": o, "answer": a, "example_id": r.get("id", "")}
            for q, o, a in zip(r["questions"], r["options"], r["answers"])]


def _race_problems(r: dict[str, Any]) -> dict[str, Any]:
    """EleutherAI/race shape (the harness's): one article, ``problems`` = a Python-literal list of
    ``{question, options, answer}``. The item is the *last* problem, as the harness scores it; the
    earlier ones (with their answer texts) are kept as ``history`` for the lm-eval prompt."""
    problems = ast.literal_eval(r["problems"]) if isinstance(r["problems"], str) else list(r["problems"])
    if not problems:
        raise KeyError("problems is empty")
    history = []
    for p in problems[:-1]:
        k = _label_index(list(RACE_LETTERS[: len(p["options"])]), str(p["answer"]), "answer")
        history.append((p["question"], p["options"][k]))
    last = problems[-1]
    return {"article": r["article"], "question": last["question"], "options": last["options"],
            "answer": last["answer"], "history": history}


def parse_race(r: dict[str, Any]) -> Fields:
    if "problems" in r:
        r = _race_problems(r)
    question = r["question"].strip()
    if question[:1] == ".":
        question = question[1:]
    blank = "_" in question
    u = question.find("_")
    return {
        "article": r["article"].strip(),
        "question": question,
        "blank": blank,
        "before_blank": question[:u].strip() if blank else "",
        "after_blank": question[u + 1:].strip() if blank else "",
        "choices": list(r["options"]),
        "label": _label_index(list(RACE_LETTERS[: len(r["options"])]), str(r["answer"]), "answer"),
        "article_raw": r["article"],  # as given: the harness's prompt uses the unstripped texts
        "question_raw": r["question"],
        "history": list(r.get("history", [])),
    }
