"""Runs a lab already has: per-document logs of other evaluation frameworks read into surfacelab's runs.

``READERS`` (``readers``) holds one reader per framework: lm-evaluation-harness's ``--log_samples`` output
(``lm_eval``); a reader finds its files and reads each document into a ``LogDoc`` (``records``: contexts, options,
gold, the logged log-likelihoods, the framework's own metrics), and ``from_log`` (``run``) turns a task's documents
into an ``EvalResult``, re-scored with a model if one is given. Every file is untrusted (``surfacelab.files``).
"""

from . import lm_eval
from .readers import READERS, LogReader, reader_for, register_reader
from .records import LogDoc, LogTask
from .run import LOG_SOURCE, from_lm_eval, from_log, log_notes

__all__ = ["LOG_SOURCE", "LogDoc", "LogReader", "LogTask", "READERS", "from_lm_eval", "from_log", "log_notes",
           "reader_for", "register_reader"]

register_reader(LogReader("lm-eval", lm_eval.detect, lm_eval.read, "lm-evaluation-harness 0.4 --log_samples: "
                          "samples_<task>_<date>.jsonl and results_<date>.json"))
