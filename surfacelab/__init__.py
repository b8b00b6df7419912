"""surfacelab: look inside zero-shot answer scoring with causal and masked language models.

>>> import surfacelab as sl
>>> lm = sl.load_lm()                     # the packaged smollm2-135m  # doctest: +SKIP
>>> r = sl.score(lm, "The man took a bath in the", [" bathtub", " xylophone"],
...              domain_premise=" the")
>>> r.table[["option", "logprob", "per_char", "dcpmi"]].shape
(2, 4)
"""

from . import alternatives, letters, paraphrase, tasks
from .engine import logprobs, next_token_logprobs
from .evaluate import ablate, evaluate, evaluate_fewshot
from .runs import EvalResult
from .task_groups import by_task
from .logs import from_lm_eval, from_log
from .models import DEFAULT_LM, DEFAULT_MLM, LM, MLM, list_backends, list_presets, load_lm, load_mlm
from .pll import BlimpResult, PLLResult, pll, pll_blimp, pll_metrics
from .report import report
from .tasks.blimp import load_blimp
from .paraphrase import MassResult, load_teaching_set, mass, mass_items
from .scorers import list_scorers, register_scorer
from .scoring import MCResult, score, score_items
from .surface_forms import variants
from .why import WhyResult, why

__version__ = "0.1.0"

__all__ = [
    "EvalResult",
    "Explorer",
    "BlimpResult",
    "PLLResult",
    "DEFAULT_LM",
    "DEFAULT_MLM",
    "LM",
    "MLM",
    "MCResult",
    "MassResult",
    "WhyResult",
    "Workbench",
    "ablate",
    "alternatives",
    "by_task",
    "evaluate",
    "evaluate_fewshot",
    "from_lm_eval",
    "from_log",
    "lesson",
    "letters",
    "list_backends",
    "list_presets",
    "list_scorers",
    "load_blimp",
    "load_teaching_set",
    "load_lm",
    "load_mlm",
    "logprobs",
    "mass",
    "mass_items",
    "next_token_logprobs",
    "paraphrase",
    "pll",
    "pll_blimp",
    "pll_metrics",
    "register_scorer",
    "report",
    "score",
    "score_items",
    "tasks",
    "variants",
    "viz",
    "why",
]


def __getattr__(name: str):
    """Import the widget and plotting layers only when asked for (``sl.Workbench``, ``sl.Explorer``, ``sl.lesson``,
    ``sl.viz``)."""
    import importlib

    if name in ("Workbench", "Explorer", "lesson"):
        return getattr(importlib.import_module(".widgets", __name__), name)
    if name == "viz":
        return importlib.import_module(".viz", __name__)
    raise AttributeError(f"module 'surfacelab' has no attribute {name!r}")
