"""Saved Workbench states: the JSON file ``Workbench.save_state`` writes, read and checked."""

from __future__ import annotations

import json
from pathlib import Path

from ...viz import check_gold

STATE_FORMAT = "surfacelab-workbench-state"


def read_state(source: str | Path | dict) -> dict:
    """Read and check a saved workbench state (a ``save_state`` file or its dict).

    Returns:
        A dict with premise, domain_premise, options, paraphrases, gold, lm, server and mlm.
    """
    if isinstance(source, dict):
        doc, where = source, "state"
    else:
        path = Path(source).expanduser()
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ValueError(f"source: no state file at {str(path)!r}") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"source: {path.name} is not a JSON state file ({err})") from None
        where = path.name
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise ValueError(f"source: {where} is not a surfacelab workbench state (no \"format\": \"{STATE_FORMAT}\")")
    return check_example(doc, f"source: {where}")


def check_example(doc: dict, where: str) -> dict:
    """Check the fields of an example (a saved state without its ``format``, or an item handed over as a dict):
    ``ValueError`` starting with ``where`` for the first bad one. Paraphrases default to none per option.

    Returns:
        A dict with premise, domain_premise, options, paraphrases, gold, lm, server and mlm (only these keys), and
        chat_template (True: the causal LM's own chat template; False: plain text) when the example has it.
    """
    if not isinstance(doc, dict):
        raise ValueError(f"{where}: expected an object (a dict), got {type(doc).__name__}")
    if not isinstance(doc.get("premise"), str):
        raise ValueError(f"{where}: premise must be a string")
    if doc.get("domain_premise") is not None and not isinstance(doc["domain_premise"], str):
        raise ValueError(f"{where}: domain_premise must be a string or null")
    opts = doc.get("options")
    if not isinstance(opts, (list, tuple)) or not all(isinstance(o, str) for o in opts):
        raise ValueError(f"{where}: options must be a list of strings")
    opts = list(opts)
    para = doc.get("paraphrases") or [""] * len(opts)
    if not isinstance(para, (list, tuple)) or len(para) != len(opts) or not all(isinstance(p, str) for p in para):
        raise ValueError(f"{where}: paraphrases must be one string per option")
    try:
        gold = check_gold(doc.get("gold"), len(opts))
    except ValueError as err:
        raise ValueError(f"{where}: {err}") from None
    for key in ("lm", "mlm"):
        if doc.get(key) is not None and not isinstance(doc[key], str):
            raise ValueError(f"{where}: {key} must be a model name")
    if doc.get("server") is not None and not isinstance(doc["server"], str):
        raise ValueError(f"{where}: server must be a URL string or null")
    if "chat_template" in doc and not isinstance(doc["chat_template"], bool):
        raise ValueError(f"{where}: chat_template must be true (the model's own chat template) or false")
    chat = {"chat_template": doc["chat_template"]} if "chat_template" in doc else {}
    return {**chat, "premise": doc["premise"], "domain_premise": doc.get("domain_premise"), "options": opts,
            "paraphrases": list(para), "gold": gold, "lm": doc.get("lm"), "server": doc.get("server") or None,
            "mlm": doc.get("mlm")}
