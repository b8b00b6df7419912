"""What a self-contained HTML page that surfacelab writes (the lesson, the run report) needs to stay safe: text
escaped, JSON that cannot end its ``<script>``, and inlined scripts and styles checked to end where they should."""

from __future__ import annotations

import html
import re
from typing import Any

#: What would end an inline script or style early (or open an HTML comment in one).
UNSAFE = re.compile(r"</(script|style)|<!--", re.IGNORECASE)
#: JSON characters written as ``\\u`` escapes inside ``<script>``: tags, entities and JavaScript's line breaks.
JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def esc(text: Any) -> str:
    """Text for HTML: escaped, quotes included (safe in an attribute too)."""
    return html.escape(str(text), quote=True)


def safe_json(text: str) -> str:
    """JSON text made safe inside ``<script>``: no string in it can close the script or open a tag.

    >>> safe_json('{"a": "</script><b>&"}')
    '{"a": "\\\\u003c/script\\\\u003e\\\\u003cb\\\\u003e\\\\u0026"}'
    """
    for char, escaped in JSON_ESCAPES.items():
        text = text.replace(char, escaped)
    return text


def inline(source: str, name: str) -> str:
    """``source`` (a script or style sheet) checked to be safe inline: nothing in it ends its element early."""
    if UNSAFE.search(source):
        raise ValueError(f"{name} holds '</script', '</style' or '<!--' and cannot be inlined")
    return source
