"""Render one record (and its few-shot examples) into an :class:`Item`."""

from __future__ import annotations

from typing import Any

from .core import Item, Template


def render_item(item_id: str, meta: dict[str, Any], template: Template) -> Item:
    """Build an Item from ``meta["fields"]`` (plus ``meta["shot_fields"]`` if any) under ``template``.

    Few-shot examples go between the template's preamble and the item's own premise.
    """
    fields = meta["fields"]
    premise, options, domain, per_option = template.render(fields)
    meta = dict(meta)
    shots = meta.get("shot_fields")
    if shots:
        if per_option is not None:
            raise ValueError(f"template {template.name!r}: few-shot prefixes are not defined for flipped tasks")
        prefix = "".join(template.render_shot(f) for f in shots)
        meta["fewshot_prefix"] = prefix
        premise = template.render_preamble(fields) + prefix + template.render_body(fields)
    return Item(
        id=item_id,
        premise=premise,
        options=options,
        gold=template.gold_index(fields),
        domain_premise=domain,
        meta=meta,
        premise_per_option=per_option,
    )
