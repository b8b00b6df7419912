"""What a log's run leaves out or does not add up, said once in the words the warnings, the command line's notes and
the explorer's run line use (``log_notes``), from the run's ``meta``."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any, Mapping

from .._format import printable
from .records import some


def logprob_note(check: Mapping[str, Any]) -> str:
    """The model's check against the log (``meta["logprob_check"]``) in one sentence."""
    if check["agrees"]:
        return f"LM re-scored: agrees with the log within {check['max_abs_diff']:.1e} nats"
    return (f"LM re-scored: differs from the log by up to {check['max_abs_diff']:.3g} nats (tolerance "
            f"{check['tolerance']:g}): lm is not the log's model, or runs in another dtype; the lm column keeps the "
            "logged values (surfacelab's are in surfacelab_logprob)")


def _documents(ids: Mapping[str, list[Any]]) -> str:
    """``doc_id 3, 7`` (one task) or ``mmlu_anatomy doc_id 3; mmlu_virology doc_id 0, ...`` (several), five at most."""
    parts, shown = [], 0
    for task, these in ids.items():
        if shown >= 5:
            parts.append("...")
            break
        head = ", ".join(map(str, these[:5 - shown])) + (", ..." if len(these) > 5 - shown else "")
        parts.append(f"doc_id {head}" if len(ids) == 1 else f"{task} doc_id {head}")
        shown += len(these)
    return "; ".join(parts)


def _passed_over(passed: list[Mapping[str, str]]) -> list[str]:
    """One note per reason a file of the folder was not read, naming a few of the files."""
    by_why: dict[str, list[Mapping[str, str]]] = {}
    for p in passed:
        by_why.setdefault(re.sub(r" \([^)]*\)", "", p["why"]), []).append(p)
    out = []
    for why, files in by_why.items():
        names = [Path(p["file"]).name for p in files]
        out.append(f"passed over {names[0]}: {files[0]['why']}" if len(files) == 1 else
                   f"passed over {len(files)} files ({some(names, 3)}): {why}")
    return out


def log_notes(meta: Mapping[str, Any], *, problems_only: bool = False) -> list[str]:
    """What a log run's table does not show, one sentence each, its text from the files made printable: the
    model's check against the log (``lm=``), documents whose logged metric the logged numbers do not give, a task
    hash that does not match, premises that are not the text the model saw, a domain premise the options are glued
    to, scorers left out, files passed over and groups left out. ``problems_only`` leaves out a check that agrees
    (the warnings say the rest)."""
    out = []
    check = meta.get("logprob_check")
    if check and not math.isnan(check["max_abs_diff"]) and not (problems_only and check["agrees"]):
        out.append(logprob_note(check))
    for metric, ids in meta.get("log_disagreements", {}).items():
        n = sum(len(v) for v in ids.values())
        out.append(f"the logged {metric} differs from the one recomputed from the logged log-likelihoods for {n} "
                   f"documents ({_documents(ids)})")
    tasks = meta.get("log_tasks", {})
    mismatched = [t for t, info in tasks.items() if info.get("hash_matches") is False]
    if mismatched:
        out.append(f"the log's document hashes do not give the task hash of the results file beside it for "
                   f"{some(mismatched, 3)} (edited, or written by another run)")
    for note in dict.fromkeys(info["context_note"] for info in tasks.values() if info.get("context_note")):
        out.append(note)
    glued = meta.get("domain_glued")
    if glued:
        out.append(f"{glued['options']} options have no leading space: under the domain premise they are glued to its "
                   f"last word ('{glued['example']}'); the log's own contexts end in whitespace, which the options "
                   "lack. End the domain premise with a space or a newline to score them as new words")
    ignored = sum(info.get("unconditioned_logprobs_ignored", 0) for info in tasks.values())
    if ignored:
        out.append(f"model_response.unconditioned_logprobs holds values in {ignored} rows; lighteval 0.13.0 never "
                   "writes it (its metrics read unconditioned log-probs from logprobs[n:2n]), so it is not read")
    out += [f"left out {why}" for why in meta.get("scorers_left_out", {}).values()]
    out += _passed_over(meta.get("checks", {}).get("passed_over", []))
    out += [f"group {g['group']} not shown: {g['why']}" for g in meta.get("checks", {}).get("groups_left_out", [])]
    return [printable(line) for line in out]


def warn(file: Path, meta: dict[str, Any]) -> None:
    """One warning per thing that does not add up or was left out (``log_notes``)."""
    for note in log_notes(meta, problems_only=True):
        warnings.warn(f"{printable(file.name)}: {note}", stacklevel=3)
