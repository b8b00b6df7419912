"""Runs a lab already has: per-document logs of other evaluation frameworks read into surfacelab's runs.

``READERS`` (``readers``) holds one reader per framework: lm-evaluation-harness's ``--log_samples`` output
(``lm_eval``, the files found by ``lm_eval_files``) and lighteval's ``--save-details`` parquet (``lighteval``); a
reader finds its files and reads a run into a ``LogRun`` (``records``: its tasks' documents -- contexts, options,
gold, the logged log-likelihoods, the framework's own metrics -- and the groups over them), and ``from_log``
(``run``) turns it into an ``EvalResult``, re-scored with a model if one is given; ``log_notes`` (``notes``) says
what it leaves out. Every file is untrusted (``surfacelab.files``).
"""

from . import lighteval, lm_eval
from .notes import log_notes
from .readers import READERS, LogReader, reader_for, register_reader
from .records import LogDoc, LogGroup, LogRun, LogTask
from .run import LOG_SOURCE, from_lm_eval, from_log

__all__ = ["LOG_SOURCE", "LogDoc", "LogGroup", "LogReader", "LogRun", "LogTask", "READERS", "from_lm_eval", "from_log",
           "log_notes", "reader_for", "register_reader"]

register_reader(LogReader("lm-eval", lm_eval.detect, lm_eval.read, "lm-evaluation-harness 0.4 --log_samples: "
                          "samples_<task>_<date>.jsonl and results_<date>.json"))
register_reader(LogReader("lighteval", lighteval.detect, lighteval.read, "lighteval 0.13 --save-details: "
                          "details/<model>/<date>/details_<task>_<date>.parquet and results_<date>.json"))
