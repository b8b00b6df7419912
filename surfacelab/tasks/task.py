"""A loaded split (:class:`Task`): its rendered items, the template and where the data came from; it re-renders
itself under another template through the task registry (families) and the template sets (names)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from .core import Item, Renderer, Template
from .registry import FAMILIES, SPECS, check_variant
from .render import render_item
from .templates import available, templates


@dataclass
class Task:
    """A loaded split: rendered items plus the template and where the data came from.

    ``source`` is the file path read (or ``"hub:<id>"``); ``source_arg`` is what was passed to
    :func:`surfacelab.tasks.load` as ``source`` (used again to draw few-shot examples).
    """

    name: str
    split: str
    items: list[Item]
    template: Template
    source: str
    variant: str = "paper"
    n_shot: int = 0
    source_arg: str | None = None

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Item]:
        return iter(self.items)

    def __getitem__(self, i: int) -> Item:
        return self.items[i]

    def __repr__(self) -> str:
        return (f"Task(name={self.name!r}, split={self.split!r}, items={len(self.items)}, "
                f"template={self.template.name!r}, source={self.source!r})")

    def frame(self) -> pd.DataFrame:
        """One row per item: id, premise, options, gold, gold option, domain premise and scalar meta."""
        rows = []
        for it in self.items:
            row: dict[str, Any] = {
                "id": it.id,
                "premise": it.premise,
                "options": list(it.options),
                "n_options": len(it.options),
                "gold": it.gold,
                "gold_option": it.gold_option,
                "domain_premise": it.domain_premise,
            }
            if it.premise_per_option is not None:
                row["premise_per_option"] = list(it.premise_per_option)
            for k, v in it.meta.items():
                if k not in row and isinstance(v, (str, int, float, bool)) and k not in ("fewshot_prefix",):
                    row[k] = v
            rows.append(row)
        return pd.DataFrame(rows)

    def with_template(self, template: Template | str | None = None, *,
                      domain_premise: Renderer | None = None) -> "Task":
        """Re-render every item (and its few-shot examples) under another template and/or domain premise.

        Args:
            template: a Template; a template family of the task (``"paper"``, ``"paper_table"``,
                ``"lm-eval"``: the ``variant`` of :func:`surfacelab.tasks.load`); the name of a
                template from ``surfacelab.tasks.templates(self.name)``; or None to keep the current one.
            domain_premise: replaces the template's domain premise (format string or callable).
        """
        tpl, variant = resolve_template(self.name, self.template if template is None else template)
        if domain_premise is not None:
            tpl = tpl.with_domain_premise(domain_premise)
        items = [render_item(it.id, it.meta, tpl) for it in self.items]
        return replace(self, items=items, template=tpl, variant=variant or self.variant)


def resolve_template(task: str, template: Template | str) -> tuple[Template, str | None]:
    """A Template from a Template, a template family (variant) name or a template-set name.

    Args:
        task: the task name (see ``surfacelab.tasks.list_tasks()``).
        template: a Template (returned as is), a family such as ``"paper"``, ``"paper_table"`` or
            ``"lm-eval"``, or the name of a template in ``surfacelab.tasks.templates(task)``.

    Returns:
        ``(template, variant)``; variant is the family name, or None for any other template.
    """
    if isinstance(template, Template):
        return template, None
    if not isinstance(template, str):
        raise ValueError("template must be a Template, a template family or name, or None, "
                         f"got {type(template).__name__}")
    spec = SPECS.get(task)
    families = spec.templates if spec is not None else {}
    if template in FAMILIES and spec is not None:
        check_variant(spec, template)
        return families[template], template
    named = templates(task) if task in available() else []
    found = [t for t in named if t.name == template]
    if found:
        return found[0], None
    raise ValueError(f"template: no template family or template named {template!r} for task {task!r}; "
                     f"families: {list(families)}; named: {[t.name for t in named]}")
