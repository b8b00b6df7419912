"""Per-task record parsers and the paper's templates (Holtzman et al. 2021).

Each parser maps one raw record to *fields* (see :mod:`surfacelab.tasks.core`); it recognises
the record shapes by their keys, so the same task reads the shared-data JSON Lines files, the
original release files and the Hugging Face hub shapes where noted.

Template strings follow ``data_loaders.py`` of the paper's public code
(peterwestuw/surface-form-competition); where its Table 7 differs, ``variant="paper_table"``
gives the table's version, and ``variant="lm-eval"`` the lm-evaluation-harness prompt
(:mod:`surfacelab.tasks.harness`).  Project-specific choices are marked "(surfacelab)".
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..registry import Registry
from .core import LETTERS, Template
from .harness import TEMPLATES as LM_EVAL_TEMPLATES

Fields = dict[str, Any]


@dataclass(frozen=True)
class TaskSpec:
    """Registry entry for one task name."""

    name: str
    dataset: str
    folder: str  # folder under the data root
    splits: tuple[str, ...]  # splits with a local file in the shared data layout
    default_split: str
    n_options: int | None  # None: varies per item
    parse: Callable[[dict[str, Any]], Fields]
    templates: dict[str, Template]  # variant (template family) -> template
    description: str
    hub: tuple[str, str | None] | None = None  # (example hub id, config) for hub datasets
    hub_splits: dict[str, str] = field(default_factory=dict)  # our split -> hub split
    explode: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
    shot_split: str | None = None  # default split to draw few-shot examples from
    local: bool = True  # present in ../shared/data

    @property
    def all_splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.splits + tuple(self.hub_splits)))


def _lc_first(s: str) -> str:
    return s[:1].lower() + s[1:]


def _label_index(labels: list[str], key: str, what: str) -> int:
    if key not in labels:
        raise KeyError(f"{what}={key!r} is not one of the choice labels {labels}")
    return labels.index(key)


# ----------------------------------------------------------------------------- COPA
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


COPA = Template(
    name="copa/code",
    premise=" {premise_trim}{bridge}",
    options=" {choice_lc}",
    domain_premise="{bridge}",
    description="' <premise minus final period> so|because' -> ' <option, first letter lower-cased>'",
)

# COPA-flipped (the paper's 'score by premise' diagnostic, code: load_examples_copa_rev):
# each option (first letter lower-cased, final period dropped) plus the reversed bridge is the
# context; the premise (first letter lower-cased) is the shared continuation.
COPA_FLIPPED = Template(
    name="copa-flipped/code",
    premise="",
    options=" {premise_lc}",
    domain_premise="{flip_bridge}",
    per_option_premise=" {choice_lc_trim}{flip_bridge}",
    description="context ' <option> because|so' (reversed bridge) -> shared continuation ' <premise>'",
)


# ----------------------------------------------------------------------------- StoryCloze
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


STORYCLOZE = Template(
    name="storycloze/code",
    premise="{story}",
    options=" {choice}",
    domain_premise=" The story continues:",
    description="the four sentences joined by spaces (a '.' added if the last does not end in . or !)",
)


# ----------------------------------------------------------------------------- ARC / OBQA / MMLU
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


ARC = Template(
    name="arc/code",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="the question stem as is -> ' <option>'",
)


def parse_obqa(r: dict[str, Any]) -> Fields:
    if "query" in r:  # shared-data shape (llm-foundry + AI2 ids)
        return {"stem": r["query"], "choices": list(r["choices"]), "label": int(r["gold"])}
    if "question_stem" in r:  # hub shape (allenai/openbookqa)
        labels = [str(x) for x in r["choices"]["label"]]
        return {"stem": r["question_stem"], "choices": list(r["choices"]["text"]),
                "label": _label_index(labels, str(r["answerKey"]).strip(), "answerKey")}
    return parse_arc(r)  # AI2 release shape


OBQA = Template(
    name="openbookqa/code",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="the question stem as is -> ' <option>'",
)


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


MMLU = Template(
    name="mmlu/surfacelab",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="(surfacelab; not in the paper) ARC-style: the question as is -> ' <option>'",
)


# ----------------------------------------------------------------------------- CommonsenseQA
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


CQA = Template(
    name="commonsenseqa/code",
    premise=" {stem_trim}? the answer is:",
    options=' "{choice_lower}"',
    domain_premise=" the answer is:",
    description="' <stem without final punctuation>? the answer is:' -> ' \"<option lower-cased>\"'",
)


# ----------------------------------------------------------------------------- BoolQ
def _boolq_question(q: str) -> str:
    """The code's question clean-up: capitalise the first letter, ' i ' -> ' I ', add '?'."""
    q = q[:1].upper() + q[1:]
    return q.replace(" i ", " I ") + "?"


def parse_boolq(r: dict[str, Any]) -> Fields:
    if "query" in r:  # shared-data shape: "Passage: <p>\nQuestion: <q>?"
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


def _boolq_premise(f: Fields) -> str:
    # The code's premise is ' title: <title>\n question: <q>\n answer:'. The shared-data copy
    # has lost the title, so the title line is left out when there is none (documented).
    head = f" title: {f['title']}\n" if f.get("title") is not None else ""
    return f"{head} question: {f['question_proc']}\n answer:"


BOOLQ = Template(
    name="boolq/code",
    premise=_boolq_premise,
    options=[" yes", " no"],
    domain_premise="\n answer:",
    description="' title: <title>\\n question: <Question>?\\n answer:' (title line dropped when the data has none)",
)


# ----------------------------------------------------------------------------- RTE / CB
def parse_rte(r: dict[str, Any]) -> Fields:
    lab = r["label"]
    label = (0 if lab == "entailment" else 1) if isinstance(lab, str) else int(lab)
    if isinstance(lab, str) and lab not in ("entailment", "not_entailment"):
        raise KeyError(f"label={lab!r} (expected 'entailment' or 'not_entailment')")
    if "sentence1" in r:  # GLUE shape: sentence1, sentence2
        return {"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": label}
    return {"premise": r["premise"], "hypothesis": r["hypothesis"], "label": label}


RTE = Template(
    name="rte/code",
    premise=" {premise}\n question: {hypothesis} true or false?\n answer:",
    options=[" true", " false"],
    domain_premise=" true or false?\n answer:",
    description="' <premise>\\n question: <hypothesis> true or false?\\n answer:'",
)

CB_LABELS = ["entailment", "contradiction", "neutral"]


def parse_cb(r: dict[str, Any]) -> Fields:
    lab = r["label"]
    if isinstance(lab, str):
        label = _label_index(CB_LABELS, lab, "label")
    else:
        label = int(lab)
    return {"premise": r["premise"], "hypothesis": r["hypothesis"], "label": label}


CB = Template(
    name="cb/code",
    premise=' question: Given that "{premise}" Is "{hypothesis}" true, false, or neither?\n answer:',
    options=[" true", " false", " neither"],
    domain_premise=" the answer is:",
    description="' question: Given that \"<premise>\" Is \"<hypothesis>\" true, false, or neither?\\n answer:'",
)


# ----------------------------------------------------------------------------- SST-2 / SST-5
def parse_sst2(r: dict[str, Any]) -> Fields:
    label = int(r["label"])
    if label not in (0, 1):
        raise KeyError(f"label={label} (SST-2 labels are 0/1)")
    return {"sentence": r["sentence"], "label": label}


SST2 = Template(
    name="sst-2/code",
    premise="{sentence}:",
    options=[" negative\n", " positive\n"],
    domain_premise=" The quote has a tone that is",
    shot=" {sentence}:{answer}",  # the code's few-shot line: ' <sentence>: positive\n'
    description="'<sentence>:' -> ' negative\\n' | ' positive\\n'",
)


def parse_sst5(r: dict[str, Any]) -> Fields:
    label = int(r["label"])
    if not 1 <= label <= 5:
        raise KeyError(f"label={label} (SST-5 labels are 1..5)")
    return {"sentence": r["sentence"], "label": label - 1}


SST5_OPTIONS = [" very negative.", " somewhat negative.", " neutral.", " somewhat positive.", " very positive."]
SST5 = Template(
    name="sst-5/code",
    premise='"{sentence}" has a tone that is',
    # The code appends GPT-2's end-of-text marker to every option (literally '<|endoftext|>').
    options=[o + "<|endoftext|>" for o in SST5_OPTIONS],
    domain_premise=" The quote has a tone that is",
    description="'\"<sentence>\" has a tone that is' -> ' very negative.<|endoftext|>' ...",
)


# ----------------------------------------------------------------------------- AG News / TREC
def parse_agn(r: dict[str, Any]) -> Fields:
    label = int(r["Class Index"]) - 1
    if not 0 <= label <= 3:
        raise KeyError(f"Class Index={label + 1} (expected 1..4)")
    return {"title": r["Title"], "description": r["Description"], "label": label}


AGN = Template(
    name="ag_news/code",
    premise=" title: {title}\n summary: {description}\n topic:",
    options=[" world", " sports", " business", " science"],
    domain_premise="\n topic:",
    description="' title: <title>\\n summary: <description>\\n topic:'",
)

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


TREC = Template(
    name="trec/code",
    premise=" {question} The answer to this question will be",
    options=[" a description.", " an entity.", " a location.", " a number.", " an abbreviation.", " a person."],
    domain_premise=" The answer to this question will be",
    description="' <detokenised question> The answer to this question will be' -> ' a description.' ...",
)


# ----------------------------------------------------------------------------- HellaSwag
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


HELLASWAG = Template(
    name="hellaswag/code",
    premise="{ctx}",
    options=" {choice}",
    domain_premise="{last_word}",
    description="the context stripped -> ' <ending>'; domain premise = last word of the context (code)",
)


# ----------------------------------------------------------------------------- RACE
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


def _race_premise(f: Fields) -> str:
    if f["blank"]:
        return f" {f['article']}\n {f['before_blank']}"
    return f" {f['article']}\n question: {f['question']} \n answer:"


def _race_options(f: Fields) -> list[str]:
    # Cloze questions put the rest of the question after the option (the code: ' <option> <rest>').
    if f["blank"]:
        return [f" {c} {f['after_blank']}" for c in f["choices"]]
    return [f" {c}" for c in f["choices"]]


RACE = Template(
    name="race/code",
    premise=_race_premise,
    options=_race_options,
    domain_premise="?",
    description="' <article>\\n question: <q> \\n answer:' -> ' <option>'; cloze '_' questions: "
                "' <article>\\n <text before _>' -> ' <option> <text after _>'",
)


# ----------------------------------------------------------------------------- paper-table variants
def _paper(t: Template, **changes: Any) -> Template:
    from dataclasses import replace

    return replace(t, name=t.name.replace("/code", "/paper_table"), **changes)


FAMILIES = ("code", "paper_table", "lm-eval")


def _variants(code: Template, paper: Template | None = None, harness: str | None = None) -> dict[str, Template]:
    """``code`` is the default; ``paper_table`` is the same template unless the paper's table differs;
    ``lm-eval`` is the harness's prompt for the task ``harness`` names, where it has one."""
    out = {"code": code, "paper_table": paper or code}
    if harness is not None:
        out["lm-eval"] = LM_EVAL_TEMPLATES[harness]
    return out


#: Every task by name, in listing order (``register_task`` adds to it).
SPECS: Registry[TaskSpec] = Registry("task", argument="name")


def register_task(spec: TaskSpec, *, overwrite: bool = False) -> TaskSpec:
    """Add a task: ``tasks.load(spec.name, source=...)`` then reads its JSON Lines with ``spec.parse`` and renders
    them with ``spec.templates`` (at least the ``"code"`` family).

    Args:
        spec: the ``TaskSpec``; its name must be new unless ``overwrite``.
        overwrite: replace the task registered under the same name.
    """
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"spec: expected a TaskSpec, got {type(spec).__name__}")
    if not isinstance(spec.templates.get("code"), Template):
        raise ValueError(f"spec: task {spec.name!r} needs a Template under templates['code'] (the default family)")
    return SPECS.register(spec.name, spec, overwrite=overwrite)


for _s in [
    TaskSpec(name="copa", dataset="COPA", folder="copa", splits=("dev", "val"), default_split="dev", n_options=2,
          parse=parse_copa, templates=_variants(COPA, harness="copa"),
          description="cause/effect bridge ' so' / ' because'; domain premise is the bridge",
          hub=("super_glue", "copa"), hub_splits={"val": "validation"}),
    TaskSpec(name="copa-flipped", dataset="COPA", folder="copa", splits=("dev", "val"), default_split="dev",
          n_options=2, parse=parse_copa, templates=_variants(COPA_FLIPPED),
          description="diagnostic: each option is the context, the premise the shared continuation"),
    TaskSpec(name="storycloze", dataset="StoryCloze 2016", folder="storycloze", splits=("val", "test"),
          default_split="test", n_options=2, parse=parse_storycloze, templates=_variants(STORYCLOZE, harness="storycloze"),
          description="' The story continues:'", shot_split="val"),
    TaskSpec(name="arc-challenge", dataset="ARC-Challenge", folder="arc-challenge", splits=("test", "pride_test"),
          default_split="test", n_options=None, parse=parse_arc, templates=_variants(ARC, harness="arc-challenge"),
          description="' the answer is:'", hub=("allenai/ai2_arc", "ARC-Challenge"),
          hub_splits={"test": "test", "validation": "validation", "train": "train"}),
    TaskSpec(name="arc-easy", dataset="ARC-Easy", folder="arc-easy", splits=("test",), default_split="test",
          n_options=None, parse=parse_arc, templates=_variants(ARC, harness="arc-easy"),
          description="' the answer is:' (hub only)", hub=("allenai/ai2_arc", "ARC-Easy"),
          hub_splits={"test": "test", "validation": "validation", "train": "train"}, local=False),
    TaskSpec(name="openbookqa", dataset="OpenBookQA", folder="openbookqa", splits=("test",), default_split="test",
          n_options=4, parse=parse_obqa, templates=_variants(OBQA, harness="openbookqa"), description="' the answer is:'"),
    TaskSpec(name="commonsenseqa", dataset="CommonsenseQA", folder="commonsenseqa", splits=("dev", "pride_test"),
          default_split="dev", n_options=5, parse=parse_cqa, templates=_variants(CQA, harness="commonsenseqa"),
          description="' the answer is:'; options quoted and lower-cased"),
    TaskSpec(name="boolq", dataset="BoolQ", folder="boolq", splits=("dev",), default_split="dev", n_options=2,
          parse=parse_boolq, templates=_variants(BOOLQ, _paper(BOOLQ, domain_premise=" answer:"), harness="boolq"),
          description="'\\n answer:' (table: ' answer:')"),
    TaskSpec(name="rte", dataset="RTE", folder="rte", splits=("dev",), default_split="dev", n_options=2,
          parse=parse_rte, templates=_variants(RTE, _paper(RTE, domain_premise=" true or false? answer:"), harness="rte"),
          description="' true or false?\\n answer:' (table: ' true or false? answer:')"),
    TaskSpec(name="cb", dataset="CB", folder="cb", splits=("dev",), default_split="dev", n_options=3,
          parse=parse_cb, templates=_variants(CB, harness="cb"), description="' the answer is:'"),
    TaskSpec(name="sst-2", dataset="SST-2", folder="sst-2", splits=("dev", "test"), default_split="test", n_options=2,
          parse=parse_sst2, templates=_variants(SST2, harness="sst-2"), description="' The quote has a tone that is'",
          shot_split="dev"),
    TaskSpec(name="sst-5", dataset="SST-5", folder="sst-5", splits=("dev", "test"), default_split="test", n_options=5,
          parse=parse_sst5, templates=_variants(SST5), description="' The quote has a tone that is'",
          shot_split="dev"),
    TaskSpec(name="ag_news", dataset="AG News", folder="ag_news", splits=("test",), default_split="test", n_options=4,
          parse=parse_agn, templates=_variants(AGN, _paper(AGN, domain_premise=" topic:")),
          description="'\\n topic:' (table: ' topic:')"),
    TaskSpec(name="trec", dataset="TREC", folder="trec", splits=("test",), default_split="test", n_options=6,
          parse=parse_trec, templates=_variants(TREC), description="' The answer to this question will be'"),
    TaskSpec(name="mmlu", dataset="MMLU", folder="mmlu", splits=("test", "dev"), default_split="test", n_options=4,
          parse=parse_mmlu, templates=_variants(MMLU, harness="mmlu"), description="' the answer is:' (surfacelab; not in the paper)",
          shot_split="dev"),
    TaskSpec(name="hellaswag", dataset="HellaSwag", folder="hellaswag", splits=("val",), default_split="val",
          n_options=4, parse=parse_hellaswag,
          templates=_variants(HELLASWAG, _paper(HELLASWAG, domain_premise=""), harness="hellaswag"),
          description="last word of the context (code; the table gives none)", hub=("Rowan/hellaswag", None),
          hub_splits={"val": "validation", "train": "train"}, local=False),
    TaskSpec(name="race-m", dataset="RACE-M", folder="race-m", splits=("test",), default_split="test", n_options=4,
          parse=parse_race, explode=explode_race, templates=_variants(RACE, harness="race-m"),
          description="'?'", hub=("ehovy/race", "middle"), hub_splits={"test": "test", "dev": "validation", "train": "train"},
          local=False),
    TaskSpec(name="race-h", dataset="RACE-H", folder="race-h", splits=("test",), default_split="test", n_options=4,
          parse=parse_race, explode=explode_race, templates=_variants(RACE, harness="race-h"),
          description="'?'", hub=("ehovy/race", "high"), hub_splits={"test": "test", "dev": "validation", "train": "train"},
          local=False),
]:
    register_task(_s)
