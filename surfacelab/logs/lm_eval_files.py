"""Which files of lm-evaluation-harness's output a path names: the run (one ``results_<date>.json`` and the
``samples_<task>_<date>.jsonl`` of the same date), its multiple-choice tasks, the groups over them
(``group_subtasks``) and what is passed over; the results file read as untrusted and checked (layout, the lm-eval
version that wrote it). ``lm_eval.read`` reads the documents of what this finds.

An output folder (``--output_path``) holds one folder per model, each holding the files of one or more runs (a date
each). A path is one samples file, or a folder searched below it: one run is read whole (every multiple_choice task
of it, a generation or perplexity task passed over and said so), or the task or group ``task=`` names (a group
opens its subtasks). Several runs in a folder are told apart by ``task=`` or by passing one run's folder.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..files import json_lines, read_json
from ..task_groups import task_leaves
from .records import TYPE_NAMES, kind_of, some

#: ``samples_<task>_<date>.jsonl``: the date is the ``date_id`` shared with ``results_<date>.json``.
SAMPLES_NAME = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
#: The largest samples log read (bytes). A whole MMLU subject is a few MB; the largest single-task logs (5-shot MMLU
#: with chat templates, HellaSwag's 10k documents) are 100-200 MB: ten times that still reads, a symlink to a disk
#: image does not.
SAMPLES_MAX_BYTES = 2 * 2 ** 30
#: The largest results file read (bytes): a whole ``--tasks mmlu`` run's (57 subjects, their groups and configs) is
#: about 1 MB.
RESULTS_MAX_BYTES = 64 * 2 ** 20
#: How deep a results file may nest (lm-eval's nest 4-5 levels; its task configs end up in ``meta``, which is written
#: out again as JSON).
RESULTS_MAX_DEPTH = 32
#: The parts of a results file surfacelab reads: key -> (the type of each value per task, what it is).
RESULTS_LAYOUT = {"configs": (dict, "configuration"), "results": (dict, "aggregate scores"),
                  "groups": (dict, "aggregate scores"), "group_subtasks": (list, "subtask names"),
                  "task_hashes": (str, "hash")}
#: The lm-eval versions whose layout surfacelab reads (``lm_eval_version`` of the results file): 0.4.x, whose
#: samples and results layout is the one described in ``lm_eval`` (tested on logs of 0.4.13).
KNOWN_VERSIONS = re.compile(r"0\.4(\.\d+)?([.+-].*)?")


@dataclass
class Samples:
    """One samples log: its file, task and run date."""

    file: Path
    task: str
    date: str


@dataclass
class FoundRun:
    """What a path names: the samples logs to read (multiple_choice tasks), the results file of their run ({} and
    None when there is none), the groups whose tasks are all read (outermost first), what the run is called ("" when
    not named by ``task=``), and what was passed over (``{"file", "why"}``) or left out (``{"group", "why"}``)."""

    samples: list[Samples]
    results: dict[str, Any]
    results_file: Path | None
    groups: list[str] = field(default_factory=list)
    name: str = ""
    passed_over: list[dict[str, str]] = field(default_factory=list)
    groups_left_out: list[dict[str, str]] = field(default_factory=list)


def find_run(path: str | Path, task: str | None) -> FoundRun:
    """The run ``path`` names (a samples file, or a folder of one run's files or holding them), narrowed to ``task``
    (a task or a group of it) when given."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a file or folder path, got {type(path).__name__}")
    p = Path(path).expanduser()
    if not p.exists():
        raise ValueError(f"path: {str(p)!r} does not exist{' (a broken link)' if p.is_symlink() else ''}")
    if not p.is_dir():  # a regular file, or what reading refuses by name (a FIFO, a device)
        m = SAMPLES_NAME.match(p.name)
        if task is not None and m and m["task"] != task:
            raise ValueError(f"task: {task!r} is not the task of {str(p)!r} ({m['task']!r})")
        one = Samples(p, m["task"] if m else p.stem, m["date"] if m else "")
        results, results_file = results_for(p.parent, one.date)
        kind, why = output_type(one, results, results_file)
        if kind != "multiple_choice":
            raise ValueError(f"path: {str(p)!r} is the log of a {kind!r} task ({one.task}, {why}); surfacelab reads "
                             "multiple_choice logs only")
        return FoundRun([one], results, results_file, name=one.task)
    named = sorted(p.rglob("samples_*.jsonl"))
    passed = [{"file": str(f), "why": "not named samples_<task>_<date>.jsonl, as lm_eval --log_samples names its logs"}
              for f in named if not SAMPLES_NAME.match(f.name)]
    runs: dict[tuple[Path, str], list[Samples]] = {}
    for f in named:
        if m := SAMPLES_NAME.match(f.name):
            runs.setdefault((f.parent, m["date"]), []).append(Samples(f, m["task"], m["date"]))
    if not runs:
        raise ValueError(f"path: the folder {str(p)!r} holds no samples_<task>_<date>.jsonl file of lm_eval "
                         "--log_samples")
    read = {key: results_for(*key) for key in runs}
    if task is not None:
        holding = [key for key in runs if task in _names(runs[key], read[key][0])]
        if not holding:
            raise ValueError(_unknown_task(task, p, runs, read))
        runs = {key: runs[key] for key in holding}
    if len(runs) > 1:
        where = [f"{key[0].relative_to(p) if key[0] != p else '.'} ({key[1]})" for key in runs]
        also = "" if task is None else f" with {task!r}"
        raise ValueError(f"path: the folder {str(p)!r} holds the logs of {len(runs)} runs{also} (folder and date: "
                         f"{some(where, 4)}): pass the folder of one run or one samples file"
                         + ("" if task else ", or task="))
    (key, samples), = runs.items()
    results, results_file = read[key]
    return _narrowed(samples, results, results_file, task, passed, p)


def _names(samples: list[Samples], results: dict[str, Any]) -> list[str]:
    """The tasks a run logged and the groups its results file names."""
    return [s.task for s in samples] + list(results.get("group_subtasks", {}))


def _unknown_task(task: str, folder: Path, runs: dict[tuple[Path, str], list[Samples]],
                  read: dict[tuple[Path, str], tuple[dict[str, Any], Path | None]]) -> str:
    """The message for a ``task=`` no run of the folder has: how many tasks and groups there are, the closest
    names and a few others (never the whole list of a large folder)."""
    tasks = sorted({s.task for samples in runs.values() for s in samples})
    groups = sorted({g for results, _ in read.values() for g in results.get("group_subtasks", {})})
    close = difflib.get_close_matches(task, tasks + groups, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    held = f"{len(tasks)} tasks ({some(tasks, 4)})" + (f" and {len(groups)} groups ({some(groups, 4)})" if groups
                                                       else "")
    return f"task: no task or group {task!r} in {str(folder)!r}{hint}; it holds {held}"


def _narrowed(samples: list[Samples], results: dict[str, Any], results_file: Path | None, task: str | None,
              passed: list[dict[str, str]], folder: Path) -> FoundRun:
    """The run's multiple_choice tasks that ``task`` names (all when None; a group: its leaves), the groups kept
    and what is passed over."""
    tree: dict[str, list[str]] = results.get("group_subtasks", {})
    wanted = task_leaves(task, tree) if task is not None else [s.task for s in samples]
    by_task = {s.task: s for s in samples}
    missing = [t for t in wanted if t not in by_task]
    chosen = [by_task[t] for t in sorted(wanted) if t in by_task]
    kinds = [(s, *output_type(s, results, results_file)) for s in chosen]
    passed = passed + [{"file": str(s.file), "why": f"the log of a {kind} task ({why}); surfacelab reads "
                                                    "multiple_choice logs only"}
                       for s, kind, why in kinds if kind != "multiple_choice"]
    chosen = [s for s, kind, _ in kinds if kind == "multiple_choice"]
    if not chosen:
        what = f"the folder {str(folder)!r}" if task is None else f"{task!r} in {str(folder)!r}"
        found = ", ".join(dict.fromkeys(kind for _, kind, _ in kinds))
        raise ValueError(f"{'path' if task is None else 'task'}: {what} holds only logs of generation or "
                         f"perplexity tasks ({found}); surfacelab reads multiple_choice logs only")
    read = {s.task for s in chosen}
    top = ([task] if task in tree else []) if task is not None else [
        g for g in tree if not any(g in kids for kids in tree.values())]  # a task asked for: no group above it
    groups, left_out = [], []
    for g in walk_groups(top, tree):
        absent = [t for t in task_leaves(g, tree) if t not in read]
        if absent:
            left_out.append({"group": g, "why": f"{len(absent)} of its tasks are not read ({some(absent, 3)})"})
        else:
            groups.append(g)
    if missing:
        left_out.append({"group": task or "", "why": f"no samples log of its tasks {some(missing, 3)}"})
    return FoundRun(chosen, results, results_file, groups, task or "", passed, left_out)


def walk_groups(top: list[str], tree: dict[str, list[str]]) -> list[str]:
    """The groups from ``top`` down, each before its subgroups (depth first, in the file's order), each once."""
    out: list[str] = []
    todo = list(top)
    while todo:
        g = todo.pop(0)
        if g in tree and g not in out:
            out.append(g)
            todo[:0] = [k for k in tree[g] if k in tree]
    return out


def output_type(found: Samples, results: dict[str, Any], results_file: Path | None) -> tuple[str, str]:
    """The task's output type and how it is known: as its results file says, else as its first line shows
    (unknown: multiple_choice, so that reading the file names what is wrong)."""
    kind = task_config(results, results_file, found.task).get("output_type")
    if kind:
        return kind, f"says {results_file.name}"
    try:
        _, first = next(json_lines(found.file, cap=SAMPLES_MAX_BYTES, where="samples log"))
        args = first["arguments"]["gen_args_0"]
    except (ValueError, KeyError, TypeError, StopIteration):
        return "multiple_choice", ""
    if isinstance(args, dict) and isinstance(args.get("arg_1"), dict):
        return "generate_until", "its requests hold generation settings"
    return "multiple_choice", ""


# ----------------------------------------------------------------------------- the results file
def results_for(folder: Path, date: str) -> tuple[dict[str, Any], Path | None]:
    """The ``results_<date>.json`` (or ``<name>_<date>.json``) written by the run of ``date`` in ``folder``, read and
    checked; ({}, None) if there is none. A JSON file of that date that is no results file (no ``configs``) is passed
    over."""
    if not date:
        return {}, None
    for cand in sorted(folder.glob(f"*_{date}.json")):
        if cand.name.startswith("samples_"):
            continue
        doc = read_json(cand, cap=RESULTS_MAX_BYTES, where=f"path: {str(cand)!r}", max_depth=RESULTS_MAX_DEPTH)
        if isinstance(doc, dict) and "configs" in doc:
            return checked_results(doc, cand), cand
    return {}, None


def checked_results(doc: dict[str, Any], file: Path) -> dict[str, Any]:
    """A results file of a layout surfacelab reads (``KNOWN_VERSIONS``) whose parts surfacelab reads have the types
    lm-eval writes (else a ValueError naming the file and the field)."""
    where = f"path: {str(file)!r} (the results file beside the log)"
    version = doc.get("lm_eval_version")
    if version is not None and not (isinstance(version, str) and KNOWN_VERSIONS.fullmatch(version)):
        raise ValueError(f"{where}: written by lm-eval {kind_of(version)}, a version whose layout surfacelab does not "
                         "know; it reads what lm-eval 0.4.x writes (lm_eval_version 0.4.*, tested on 0.4.13)")
    for key, (kind, what) in RESULTS_LAYOUT.items():
        part = doc.get(key, {})
        if not isinstance(part, dict):
            raise ValueError(f"{where}: {key} is {kind_of(part)}, not an object holding each task's {what}")
        bad = next((t for t, v in part.items() if not isinstance(v, kind)), None)
        if bad is not None:
            raise ValueError(f"{where}: {key}.{bad} is {kind_of(part[bad])}, not {TYPE_NAMES[kind]} (the task's "
                             f"{what})")
    for g, kids in doc.get("group_subtasks", {}).items():
        if not all(isinstance(k, str) for k in kids):
            bad = next(k for k in kids if not isinstance(k, str))
            raise ValueError(f"{where}: group_subtasks.{g} holds {kind_of(bad)}, not a task name")
    if not isinstance(doc.get("n-shot", {}), dict):
        raise ValueError(f"{where}: n-shot is {kind_of(doc['n-shot'])}, not an object holding each task's few-shot "
                         "count")
    if not isinstance(doc.get("model_name", ""), str):
        raise ValueError(f"{where}: model_name is {kind_of(doc['model_name'])}, not a string")
    return doc


def task_config(results: dict[str, Any], file: Path | None, task: str) -> dict[str, Any]:
    """The task's configuration from its results file, its fields surfacelab reads checked ({} when none)."""
    config = results.get("configs", {}).get(task, {})
    for key in ("output_type", "target_delimiter"):
        if key in config and not isinstance(config[key], str):
            raise ValueError(f"path: {str(file)!r} (the results file beside the log): configs.{task}.{key} is "
                             f"{kind_of(config[key])}, not a string")
    return config
