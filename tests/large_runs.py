"""Runs of a whole dataset's size for the explorer's tests and ``benchmarks/bench_explorer_browser.py``, without a
model over 14,042 items: the real lm-eval 0.4.13 MMLU run in ``tests/logs/lm_eval_mmlu/zero_shot`` (57 subjects, 2
documents each, smollm2-135m), each item keeping its task; and a run made of a real run's rows
copied until it holds ``n`` items (ids made unique: real rows, more of them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from surfacelab import explore
from surfacelab.logs import from_log
from surfacelab.runs import EvalResult

MMLU_LOG = Path(__file__).resolve().parent / "logs" / "lm_eval_mmlu" / "zero_shot"
#: Items of a full MMLU test split (lm-eval's ``mmlu`` group).
FULL_MMLU = 14_042


def mmlu_log_run(folder: Path = MMLU_LOG) -> EvalResult:
    """The lm-eval MMLU run of ``folder`` as one run (``from_log``: each item keeps its task, ``mmlu_<subject>``)."""
    return from_log(folder, n_boot=0)


def replicated(run: EvalResult, n: int) -> EvalResult:
    """``run``'s rows copied until the run holds ``n`` items: copy ``k`` of an item has the id ``<id>~<k>``."""
    copies = -(-n // len(run.items))
    parts = [dataclasses.replace(run, items=run.items.assign(id=run.items["id"].astype(str) + f"~{k}"))
             for k in range(copies)]
    whole = explore.combine(parts, n_boot=0)
    cut = dataclasses.replace(whole, items=whole.items[whole.items["item"] < n].reset_index(drop=True),
                              scores=whole.scores[whole.scores["item"] < n].reset_index(drop=True))
    return explore.combine([cut], n_boot=0)  # its accuracy, paired tests and labels over the n items
