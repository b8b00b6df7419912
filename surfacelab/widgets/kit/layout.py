"""Widget-tree helpers every widget of surfacelab uses: boxes with a CSS class, a stylesheet as a hidden widget,
classes on many widgets at once, one-line error messages, and closing a whole tree."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Callable, Iterable

import ipywidgets as w


def box(children: Iterable[w.Widget], cls: str, *, vertical: bool = False) -> w.Box:
    """An ``HBox`` (``VBox`` when ``vertical``) of ``children`` with the CSS class ``cls``."""
    out = (w.VBox if vertical else w.HBox)(list(children))
    out.add_class(cls)
    return out


def stylesheet(path: Path) -> w.HTML:
    """The CSS file ``path`` as a hidden ``<style>`` widget (placed first in a widget's tree)."""
    style = w.HTML(f"<style>{path.read_text(encoding='utf-8')}</style>")
    style.layout.display = "none"
    return style


def classed(pairs: Iterable[tuple[w.Widget, str]]) -> None:
    """Give each widget its stable CSS class (what the browser tests and the stylesheets select)."""
    for widget, cls in pairs:
        widget.add_class(cls)


def message_html(err: BaseException, public: Callable[[str], str] = str) -> str:
    """An error as the one line a widget shows (escaped; ``public``: the app policy's ``public``, which names no place
    on the host in the app)."""
    return f"<span class='sl-error'>⚠ {html.escape(public(str(err) or type(err).__name__))}</span>"


def close_tree(widget: w.Widget) -> None:
    """Close ``widget``, every widget below it and their layout and style widgets."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if isinstance(part, w.Widget):
            part.close()
    widget.close()
