"""Dataset registry: loaders for the evaluation data plus the paper's templates.

>>> import surfacelab.tasks as tasks
>>> tasks.list_tasks()                               # doctest: +SKIP
>>> copa = tasks.load("copa", "val", limit=20)   # doctest: +SKIP
>>> copa[0].premise, copa[0].options, copa[0].domain_premise            # doctest: +SKIP
(' The man turned on the faucet so', [' the toilet filled with water.', ' water flowed from the spout.'], ' so')

Templates follow the paper's public code (``variant="paper"``, default); ``variant="paper_table"``
gives its Table 7 where the two differ (HellaSwag, RTE, BoolQ, AG News domain premises);
``variant="lm-eval"`` gives lm-evaluation-harness 0.4.13's prompt for the tasks the harness has
(:mod:`surfacelab.tasks.harness`; ``harness_table()`` lists them with the YAML each follows).  Each
item keeps its raw record in ``meta["raw"]`` and the template's input in ``meta["fields"]``,
so ``task.with_template(...)`` re-renders a loaded task (see :mod:`surfacelab.tasks.task`).
"""

from __future__ import annotations

from . import harness
from .core import Item, Template
from .harness import LMEvalTemplate
from .harness import table as harness_table
from .loader import DATA_DIR, default_data_root, fewshot, list_tasks, load, read_jsonl
from .blimp import load_blimp
from .parsers import detokenize
from .registry import SPECS, TaskSpec, register_task
from .task import Task, resolve_template
from .templates import available as available_templates
from .templates import templates

__all__ = [
    "Item",
    "Task",
    "Template",
    "LMEvalTemplate",
    "resolve_template",
    "harness",
    "harness_table",
    "TaskSpec",
    "SPECS",
    "register_task",
    "list_tasks",
    "load",
    "fewshot",
    "templates",
    "available_templates",
    "DATA_DIR",
    "default_data_root",
    "read_jsonl",
    "load_blimp",
    "detokenize",
]
