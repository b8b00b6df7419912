"""Template sets shipped as JSON in ``data/templates/`` (for ``ablate()``).

File format (``data/templates/<task>.json``)::

    {"task": "sst-2", "description": "...",
     "templates": [{"name": "...", "premise": "...", "options": [" negative", " positive"],
                    "domain_premise": "...", "description": "...", "shot": "..."}, ...]}

``premise``, ``domain_premise``, ``shot`` and a string ``options`` are ``str.format`` patterns
over the task's fields (see :mod:`surfacelab.tasks.core`); a list ``options`` is a fixed set of
verbalisers indexed by the label.  A key left out is inherited from the task's default
("paper") template, so a domain-premise variant only needs ``name`` and ``domain_premise``.
The folder is ``$SURFACELAB_TEMPLATES`` if set, else ``data/templates`` in the repository.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from .core import Template
from .registry import SPECS

TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "data" / "templates"
_ALIASES = {"arc-easy": "arc-challenge"}  # same question format, same domain-premise variants


def template_dir() -> Path:
    """Folder the JSON template sets are read from."""
    env = os.environ.get("SURFACELAB_TEMPLATES")
    return Path(env) if env else TEMPLATE_DIR


def available() -> list[str]:
    """Task names that have a template set."""
    d = template_dir()
    names = sorted(p.stem for p in d.glob("*.json")) if d.is_dir() else []
    return names + sorted(a for a, b in _ALIASES.items() if b in names)


def _parse(path: Path, task: str) -> list[Template]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: line {exc.lineno}: malformed JSON ({exc.msg})") from None
    base = SPECS[task].templates["paper"] if task in SPECS else None
    out = []
    for i, entry in enumerate(doc.get("templates", [])):
        if "name" not in entry:
            raise ValueError(f"{path}: template #{i + 1} has no 'name'")
        known = {"name", "premise", "options", "domain_premise", "description", "shot", "per_option_premise"}
        extra = set(entry) - known
        if extra:
            raise ValueError(f"{path}: template {entry['name']!r} has unknown keys {sorted(extra)}")
        changes = dict(entry)
        if base is None:
            missing = {"premise", "options", "domain_premise"} - set(entry)
            if missing:
                raise ValueError(f"{path}: template {entry['name']!r} lacks {sorted(missing)}")
        else:
            if "premise" in changes and "shot" not in changes:
                changes["shot"] = None  # the default shot (premise + answer + newline) fits a new premise
            if "description" not in changes:
                changes["description"] = ""
            if "options" in changes and isinstance(changes["options"], list):
                changes["options"] = tuple(changes["options"])
        try:  # a pattern is checked as the Template is made (tasks.core.check_pattern)
            out.append(Template(**changes) if base is None else replace(base, **changes))
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
    return out


def templates(name: str) -> list[Template]:
    """Templates shipped for a task (e.g. 15+ SST-2 prompts, domain-premise variants for ARC / CQA).

    Args:
        name: task name with a template set; see :func:`available`.

    Returns:
        the templates in file order; render a task with one via ``task.with_template(t)``.
    """
    key = _ALIASES.get(name, name)
    path = template_dir() / f"{key}.json"
    if not isinstance(name, str) or not path.is_file():
        raise ValueError(f"name: no template set for {name!r} (looked for {path}); available: {available()}")
    return _parse(path, name if name in SPECS else key)
