"""The task registry: each task's parser (:mod:`surfacelab.tasks.parsers`) and the paper's templates
(Holtzman et al. 2021), as a :class:`TaskSpec` per task name (``register_task`` adds one).

Template strings follow ``data_loaders.py`` of the paper's public code
(peterwestuw/surface-form-competition); where its Table 7 differs, ``variant="paper_table"``
gives the table's version, and ``variant="lm-eval"`` the lm-evaluation-harness prompt
(:mod:`surfacelab.tasks.harness`).  Project-specific choices are marked "(surfacelab)".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..registry import Registry
from .core import Fields, Template
from .harness import TEMPLATES as LM_EVAL_TEMPLATES
from .parsers import (explode_race, parse_agn, parse_arc, parse_boolq, parse_cb, parse_copa, parse_cqa,
                      parse_hellaswag, parse_mmlu, parse_obqa, parse_race, parse_rte, parse_sst2, parse_sst5,
                      parse_storycloze, parse_trec)


@dataclass(frozen=True)
class TaskSpec:
    """Registry entry for one task name."""

    name: str
    dataset: str
    folder: str  # folder under the data root
    splits: tuple[str, ...]  # splits with a file in the data/eval layout
    default_split: str
    n_options: int | None  # None: varies per item
    parse: Callable[[dict[str, Any]], Fields]
    templates: dict[str, Template]  # variant (template family) -> template
    description: str
    hub: tuple[str, str | None] | None = None  # (example hub id, config) for hub datasets
    hub_splits: dict[str, str] = field(default_factory=dict)  # our split -> hub split
    explode: Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None
    shot_split: str | None = None  # default split to draw few-shot examples from
    shipped: bool = True  # its files come with surfacelab (data/eval); False: hub only, or fetched by the user
    obtain: str = ""  # for a task surfacelab may not ship: where its files come from and the shape they need

    @property
    def all_splits(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.splits + tuple(self.hub_splits)))


# ----------------------------------------------------------------------------- COPA


COPA = Template(
    name="copa/paper",
    premise=" {premise_trim}{bridge}",
    options=" {choice_lc}",
    domain_premise="{bridge}",
    description="' <premise minus final period> so|because' -> ' <option, first letter lower-cased>'",
)

# COPA-flipped (the paper's 'score by premise' diagnostic, code: load_examples_copa_rev):
# each option (first letter lower-cased, final period dropped) plus the reversed bridge is the
# context; the premise (first letter lower-cased) is the shared continuation.
COPA_FLIPPED = Template(
    name="copa-flipped/paper",
    premise="",
    options=" {premise_lc}",
    domain_premise="{flip_bridge}",
    per_option_premise=" {choice_lc_trim}{flip_bridge}",
    description="context ' <option> because|so' (reversed bridge) -> shared continuation ' <premise>'",
)


# ----------------------------------------------------------------------------- StoryCloze


STORYCLOZE = Template(
    name="storycloze/paper",
    premise="{story}",
    options=" {choice}",
    domain_premise=" The story continues:",
    description="the four sentences joined by spaces (a '.' added if the last does not end in . or !)",
)


# ----------------------------------------------------------------------------- ARC / OBQA / MMLU


ARC = Template(
    name="arc/paper",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="the question stem as is -> ' <option>'",
)


OBQA = Template(
    name="openbookqa/paper",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="the question stem as is -> ' <option>'",
)


MMLU = Template(
    name="mmlu/surfacelab",
    premise="{stem}",
    options=" {choice}",
    domain_premise=" the answer is:",
    description="(surfacelab; not in the paper) ARC-style: the question as is -> ' <option>'",
)


# ----------------------------------------------------------------------------- CommonsenseQA


CQA = Template(
    name="commonsenseqa/paper",
    premise=" {stem_trim}? the answer is:",
    options=' "{choice_lower}"',
    domain_premise=" the answer is:",
    description="' <stem without final punctuation>? the answer is:' -> ' \"<option lower-cased>\"'",
)


# ----------------------------------------------------------------------------- BoolQ


def _boolq_premise(f: Fields) -> str:
    # The code's premise is ' title: <title>\n question: <q>\n answer:'. The data/eval copy
    # has lost the title, so the title line is left out when there is none (documented).
    head = f" title: {f['title']}\n" if f.get("title") is not None else ""
    return f"{head} question: {f['question_proc']}\n answer:"


BOOLQ = Template(
    name="boolq/paper",
    premise=_boolq_premise,
    options=[" yes", " no"],
    domain_premise="\n answer:",
    description="' title: <title>\\n question: <Question>?\\n answer:' (title line dropped when the data has none)",
)


# ----------------------------------------------------------------------------- RTE / CB


RTE = Template(
    name="rte/paper",
    premise=" {premise}\n question: {hypothesis} true or false?\n answer:",
    options=[" true", " false"],
    domain_premise=" true or false?\n answer:",
    description="' <premise>\\n question: <hypothesis> true or false?\\n answer:'",
)


CB = Template(
    name="cb/paper",
    premise=' question: Given that "{premise}" Is "{hypothesis}" true, false, or neither?\n answer:',
    options=[" true", " false", " neither"],
    domain_premise=" the answer is:",
    description="' question: Given that \"<premise>\" Is \"<hypothesis>\" true, false, or neither?\\n answer:'",
)


# ----------------------------------------------------------------------------- SST-2 / SST-5


SST2 = Template(
    name="sst-2/paper",
    premise="{sentence}:",
    options=[" negative\n", " positive\n"],
    domain_premise=" The quote has a tone that is",
    shot=" {sentence}:{answer}",  # the code's few-shot line: ' <sentence>: positive\n'
    description="'<sentence>:' -> ' negative\\n' | ' positive\\n'",
)


SST5_OPTIONS = [" very negative.", " somewhat negative.", " neutral.", " somewhat positive.", " very positive."]
SST5 = Template(
    name="sst-5/paper",
    premise='"{sentence}" has a tone that is',
    # The code appends GPT-2's end-of-text marker to every option (literally '<|endoftext|>').
    options=[o + "<|endoftext|>" for o in SST5_OPTIONS],
    domain_premise=" The quote has a tone that is",
    description="'\"<sentence>\" has a tone that is' -> ' very negative.<|endoftext|>' ...",
)


# ----------------------------------------------------------------------------- AG News / TREC


STORYCLOZE_OBTAIN = (
    "StoryCloze is not shipped: its authors hand it out through a request form "
    "(https://cs.rochester.edu/nlp/rocstories/). Save the Spring 2016 val and test TSVs as JSON Lines, one object "
    "per row with the TSV's columns (InputStoryid, InputSentence1..InputSentence4, RandomFifthSentenceQuiz1, "
    "RandomFifthSentenceQuiz2, AnswerRightEnding), as storycloze/val.jsonl and storycloze/test.jsonl under "
    "$SURFACELAB_DATA, or pass source=<file.jsonl>")
AGN_OBTAIN = (
    "AG News is not shipped: AG's corpus is for non-commercial research use only. Take test.csv of the "
    "classification version (Zhang et al. 2015; 7,600 rows: Class Index 1-4, Title, Description) and save it as "
    "JSON Lines with those three keys, as ag_news/test.jsonl under $SURFACELAB_DATA, or pass source=<file.jsonl>")

AGN = Template(
    name="ag_news/paper",
    premise=" title: {title}\n summary: {description}\n topic:",
    options=[" world", " sports", " business", " science"],
    domain_premise="\n topic:",
    description="' title: <title>\\n summary: <description>\\n topic:'",
)


TREC = Template(
    name="trec/paper",
    premise=" {question} The answer to this question will be",
    options=[" a description.", " an entity.", " a location.", " a number.", " an abbreviation.", " a person."],
    domain_premise=" The answer to this question will be",
    description="' <detokenised question> The answer to this question will be' -> ' a description.' ...",
)


# ----------------------------------------------------------------------------- HellaSwag


HELLASWAG = Template(
    name="hellaswag/paper",
    premise="{ctx}",
    options=" {choice}",
    domain_premise="{last_word}",
    description="the context stripped -> ' <ending>'; domain premise = last word of the context (code)",
)


# ----------------------------------------------------------------------------- RACE


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
    name="race/paper",
    premise=_race_premise,
    options=_race_options,
    domain_premise="?",
    description="' <article>\\n question: <q> \\n answer:' -> ' <option>'; cloze '_' questions: "
                "' <article>\\n <text before _>' -> ' <option> <text after _>'",
)


# ----------------------------------------------------------------------------- paper-table variants
def _paper(t: Template, **changes: Any) -> Template:
    from dataclasses import replace

    return replace(t, name=t.name.replace("/paper", "/paper_table"), **changes)


FAMILIES = ("paper", "paper_table", "lm-eval")


def _variants(paper: Template, table: Template | None = None, harness: str | None = None) -> dict[str, Template]:
    """``paper`` (the templates of the paper's public code) is the default; ``paper_table`` is the same template
    unless the paper's Table 7 differs; ``lm-eval`` is the harness's prompt for the task ``harness`` names, where it
    has one."""
    out = {"paper": paper, "paper_table": table or paper}
    if harness is not None:
        out["lm-eval"] = LM_EVAL_TEMPLATES[harness]
    return out


#: Every task by name, in listing order (``register_task`` adds to it).
SPECS: Registry[TaskSpec] = Registry("task", argument="name",
                                     note=lambda spec: "" if spec.shipped else "not shipped")


def register_task(spec: TaskSpec, *, overwrite: bool = False) -> TaskSpec:
    """Add a task: ``tasks.load(spec.name, source=...)`` then reads its JSON Lines with ``spec.parse`` and renders
    them with ``spec.templates`` (at least the ``"paper"`` family).

    Args:
        spec: the ``TaskSpec``; its name must be new unless ``overwrite``.
        overwrite: replace the task registered under the same name.
    """
    if not isinstance(spec, TaskSpec):
        raise TypeError(f"spec: expected a TaskSpec, got {type(spec).__name__}")
    if not isinstance(spec.templates.get("paper"), Template):
        raise ValueError(f"spec: task {spec.name!r} needs a Template under templates['paper'] (the default family)")
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
          default_split="test", n_options=2, parse=parse_storycloze,
          templates=_variants(STORYCLOZE, harness="storycloze"),
          description="' The story continues:'", shot_split="val", shipped=False, obtain=STORYCLOZE_OBTAIN),
    TaskSpec(name="arc-challenge", dataset="ARC-Challenge", folder="arc-challenge", splits=("test", "pride_test"),
          default_split="test", n_options=None, parse=parse_arc, templates=_variants(ARC, harness="arc-challenge"),
          description="' the answer is:'", hub=("allenai/ai2_arc", "ARC-Challenge"),
          hub_splits={"test": "test", "validation": "validation", "train": "train"}),
    TaskSpec(name="arc-easy", dataset="ARC-Easy", folder="arc-easy", splits=("test",), default_split="test",
          n_options=None, parse=parse_arc, templates=_variants(ARC, harness="arc-easy"),
          description="' the answer is:' (hub only)", hub=("allenai/ai2_arc", "ARC-Easy"),
          hub_splits={"test": "test", "validation": "validation", "train": "train"}, shipped=False),
    TaskSpec(name="openbookqa", dataset="OpenBookQA", folder="openbookqa", splits=("test",), default_split="test",
          n_options=4, parse=parse_obqa, templates=_variants(OBQA, harness="openbookqa"),
          description="' the answer is:'"),
    TaskSpec(name="commonsenseqa", dataset="CommonsenseQA", folder="commonsenseqa", splits=("dev", "pride_test"),
          default_split="dev", n_options=5, parse=parse_cqa, templates=_variants(CQA, harness="commonsenseqa"),
          description="' the answer is:'; options quoted and lower-cased"),
    TaskSpec(name="boolq", dataset="BoolQ", folder="boolq", splits=("dev",), default_split="dev", n_options=2,
          parse=parse_boolq, templates=_variants(BOOLQ, _paper(BOOLQ, domain_premise=" answer:"), harness="boolq"),
          description="'\\n answer:' (table: ' answer:')"),
    TaskSpec(name="rte", dataset="RTE", folder="rte", splits=("dev",), default_split="dev", n_options=2,
          parse=parse_rte,
          templates=_variants(RTE, _paper(RTE, domain_premise=" true or false? answer:"), harness="rte"),
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
          description="'\\n topic:' (table: ' topic:')", shipped=False, obtain=AGN_OBTAIN),
    TaskSpec(name="trec", dataset="TREC", folder="trec", splits=("test",), default_split="test", n_options=6,
          parse=parse_trec, templates=_variants(TREC), description="' The answer to this question will be'"),
    TaskSpec(name="mmlu", dataset="MMLU", folder="mmlu", splits=("test", "dev"), default_split="test", n_options=4,
          parse=parse_mmlu, templates=_variants(MMLU, harness="mmlu"),
          description="' the answer is:' (surfacelab; not in the paper)",
          shot_split="dev"),
    TaskSpec(name="hellaswag", dataset="HellaSwag", folder="hellaswag", splits=("val",), default_split="val",
          n_options=4, parse=parse_hellaswag,
          templates=_variants(HELLASWAG, _paper(HELLASWAG, domain_premise=""), harness="hellaswag"),
          description="last word of the context (code; the table gives none)", hub=("Rowan/hellaswag", None),
          hub_splits={"val": "validation", "train": "train"}, shipped=False),
    TaskSpec(name="race-m", dataset="RACE-M", folder="race-m", splits=("test",), default_split="test", n_options=4,
          parse=parse_race, explode=explode_race, templates=_variants(RACE, harness="race-m"),
          description="'?'", hub=("ehovy/race", "middle"),
          hub_splits={"test": "test", "dev": "validation", "train": "train"},
          shipped=False),
    TaskSpec(name="race-h", dataset="RACE-H", folder="race-h", splits=("test",), default_split="test", n_options=4,
          parse=parse_race, explode=explode_race, templates=_variants(RACE, harness="race-h"),
          description="'?'", hub=("ehovy/race", "high"),
          hub_splits={"test": "test", "dev": "validation", "train": "train"},
          shipped=False),
]:
    register_task(_s)


def check_variant(spec: TaskSpec, variant: str) -> None:
    """Raise a ValueError naming ``variant`` unless the task has that template family."""
    if variant not in FAMILIES:
        raise ValueError(f"variant: unknown variant {variant!r}; choose one of {list(FAMILIES)}")
    if variant not in spec.templates:
        with_it = [n for n, s in SPECS.items() if variant in s.templates]
        raise ValueError(f"variant: task {spec.name!r} has no {variant!r} template (lm-evaluation-harness 0.4.13 has "
                         f"no such task); tasks with one: {', '.join(with_it)}")
