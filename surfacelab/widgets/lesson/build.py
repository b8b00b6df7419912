"""A lesson's items and their views: what ``sl.lesson`` and the workbench's "export lesson" button put in a page.

``lesson_items`` reads what a lesson is made of (the teaching set, a list of example dicts, a saved-state file or a
folder of them: data only, checked field by field) into ``LessonItem`` s. ``build_lesson`` loads each item into a
``Workbench`` that is not live and updates it, so every number, table, figure and sentence is the one the workbench
shows for that item (no second copy of any scoring or drawing): ``snapshot`` reads each view's widgets as they
stand (HTML, plotly JSON, token-heatmap rows) and ``lesson_page`` writes them into one HTML file. The
workbench's "export lesson" button is its part ``workbench.lessons.LessonButton``.
"""

from __future__ import annotations

import html
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as w

from ...paraphrase import TEACHING_SET, load_teaching_set
from ..workbench.examples import TEACHING, teaching_example
from ..kit.heatmap import TokenHeatmap
from .page import write_lesson
from .text import notebook_cells
from ..kit.plot import PlotView
from ..workbench.updates import ViewState
from ..workbench.state import STATE_FORMAT, check_example, read_state

if TYPE_CHECKING:
    from ..workbench.views.base import View
    from ..workbench.widget import Workbench

#: The names of the teaching set as an ``items`` spec.
TEACHING_NAMES = ("teaching", TEACHING)
#: What ``items`` may be, for the error messages.
ITEMS_HELP = ("'teaching' (the teaching set), a list of items (dicts with premise, domain_premise, options, "
              "paraphrases, gold; or teaching-set items), a saved-state .json file or a folder of them")
#: The keys of an example that the lesson reads (a state's model names and server are not followed: the lesson
#: scores with the models it is given, and a file never makes it contact a server).
EXAMPLE_KEYS = ("premise", "domain_premise", "options", "paraphrases", "gold")


@dataclass
class LessonItem:
    """One page of a lesson: the example the workbench loads, its title, and where given the teaching set's note
    (what it shows on the model it was chosen on) and lesson label."""

    title: str
    example: dict
    note: str | None = None
    label: str | None = None
    views: list[dict] = field(default_factory=list)  # ``snapshot`` of every view, once built
    message: str = ""  # the workbench's problems with the inputs (HTML, escaped there), once built


def lesson_items(items: Any) -> tuple[list[LessonItem], bool]:
    """The items of ``items`` (see ``ITEMS_HELP``) and whether they are the whole packaged teaching set (then the
    lesson text of notebook 02, written for the whole set, goes with them). Errors name ``items`` and say what is
    wrong."""
    if isinstance(items, str) and items.strip().lower() in TEACHING_NAMES:
        return teaching_items(load_teaching_set()), True
    if isinstance(items, (str, Path)):
        return state_items(Path(items).expanduser()), False
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, (list, tuple)):
        raise TypeError(f"items: expected {ITEMS_HELP}; got {type(items).__name__}")
    if not items:
        raise ValueError("items: an empty list; a lesson needs at least one item")
    if all(isinstance(it, dict) and "concepts" in it for it in items):
        # notebook 02's text is the whole set's lesson (its table lists all of them): a part of it goes without
        return teaching_items(items), list(items) == load_teaching_set()
    out = []
    for i, it in enumerate(items):
        where = f"items[{i}]"
        if isinstance(it, dict) and it.get("format") == STATE_FORMAT:  # a saved state's dict
            try:
                example = read_state(it)
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
        else:
            example = check_example(it, where)
        title = it.get("title", it.get("id"))
        if title is not None and not isinstance(title, (str, int)):
            raise ValueError(f"{where}: title must be a string")
        note = it.get("note")
        out.append(LessonItem(str(title) if title is not None else f"item {i + 1}",
                              {k: example[k] for k in EXAMPLE_KEYS}, note if isinstance(note, str) else None))
    return out, False


def teaching_items(items: list[dict]) -> list[LessonItem]:
    """Teaching-set items (as ``load_teaching_set`` returns them) as lesson items: each concept's first form the
    option, the others its paraphrases, the answer the gold."""
    out = []
    for i, it in enumerate(items):
        try:
            example = teaching_example(it)
        except (KeyError, ValueError, TypeError, AttributeError) as err:
            raise ValueError(f"items[{i}]: not a teaching-set item (id, premise, domain_premise, concepts, answer): "
                             f"{err}") from None
        checked = check_example(example, f"items[{i}]")
        out.append(LessonItem(str(it.get("id", f"item {i + 1}")), {k: checked[k] for k in EXAMPLE_KEYS},
                              it.get("note"), it.get("lesson")))
    return out


def state_items(path: Path) -> list[LessonItem]:
    """The saved states in ``path`` (a ``.json`` file, or a folder whose ``.json`` files that are states are read, by
    name; other JSON files there are left out): parsed as data, each field checked."""
    if path.is_dir():
        found = []
        for p in sorted(path.glob("*.json")):
            try:
                found.append((p, read_state(p)))
            except ValueError:
                continue  # another JSON file in the folder
        if not found:
            raise ValueError(f"items: no saved workbench state (.json with \"format\": \"{STATE_FORMAT}\") in "
                             f"{str(path)!r}")
    elif path.suffix == ".json":
        if not path.is_file():
            raise FileNotFoundError(f"items: no saved-state file at {str(path)!r}")
        try:
            found = [(path, read_state(path))]
        except ValueError as err:
            raise ValueError(f"items: {err}") from None
    elif not path.exists():
        raise ValueError(f"items: expected {ITEMS_HELP}; got {str(path)!r}, which is neither 'teaching' nor a file "
                         "or folder")
    else:
        raise ValueError(f"items: {str(path)!r} is not a .json saved state or a folder of them")
    return [LessonItem(p.stem, {k: s[k] for k in EXAMPLE_KEYS}) for p, s in found]


def check_path(path: Any) -> Path:
    """``path`` as the ``.html`` file a lesson is written to; errors name ``path``."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path: expected a .html file name, got {type(path).__name__}")
    out = Path(path).expanduser()
    if out.suffix.lower() != ".html":
        raise ValueError(f"path: expected a file name ending in .html, got {out.name!r}")
    return out


def snapshot(view: "View") -> dict:
    """What ``view`` shows now, as data for the page: its title, its state (and message), and its parts in the
    order the workbench lays them out: HTML (escaped by the view), plotly figures (JSON), token heatmaps (the rows
    ``TokenHeatmap`` draws) and choices (a picker's description and value), then its reading (HTML)."""
    parts: list[dict] = []

    def walk(widget: w.Widget) -> None:
        if widget.layout.display == "none":
            return
        classes = [c for c in widget._dom_classes if c.startswith("sl-")]
        if isinstance(widget, PlotView):
            if widget.figure:
                parts.append({"figure": widget.figure, "classes": classes})
        elif isinstance(widget, TokenHeatmap):
            if widget.rows:
                parts.append({"heatmap": {"rows": widget.rows, "has_entropy": widget.has_entropy,
                                          "max_tokens": widget.max_tokens}, "classes": classes})
        elif isinstance(widget, w.HTML):
            if widget.value:
                parts.append({"html": widget.value, "classes": classes})
        elif isinstance(widget, w.Dropdown):
            parts.append({"html": f"<div class='sl-hint'>{html.escape(widget.description)}: "
                                  f"{html.escape(str(widget.label))}</div>", "classes": classes})
        elif isinstance(widget, w.Box):
            for child in widget.children:
                walk(child)

    state = view.state
    if state == ViewState.READY:
        walk(view.content)
        if view.text.value:
            parts.append({"html": view.text.value, "classes": ["sl-view-text"]})
    message = {ViewState.ERROR: view.message, ViewState.BLOCKED: "waiting for valid inputs (see above)"}.get(
        state, "" if state == ViewState.READY else f"not computed ({state.value})")
    return {"name": view.name, "title": view.title, "state": state.value, "message": message, "parts": parts}


def models_line(bench: "Workbench") -> str:
    """The models a lesson was computed with, in words."""
    return f"causal LM {bench.lm.name} · masked LM {bench.mlm.name}"


def build_lesson(bench: "Workbench", items: list[LessonItem], path: Path, *, title: str, lesson_text: bool,
                 progress: Callable[[float, str], None] | None = None,
                 check: Callable[[], None] | None = None) -> Path:
    """Compute every view of every item on ``bench`` (a Workbench that is not live: each item loaded, then
    ``update``), with the lesson text of notebook 02 when ``lesson_text``, and write the page to ``path``.
    ``progress(fraction, note)`` hears after each step; ``check()`` may raise ``Cancelled`` between items."""
    steps = len(items) + (1 if lesson_text else 0)
    start = time.monotonic()

    def step(done: int, note: str) -> None:
        if progress is not None:
            elapsed = time.monotonic() - start
            left = f" · about {elapsed / done * (steps - done):.0f} s left" if done else ""
            progress(done / steps, f"{note}{left}")

    step(0, f"computing item 1 of {len(items)}")
    for i, item in enumerate(items):
        if check is not None:
            check()
        bench.load_example(item.example)
        bench.update()
        item.message = bench.message.value
        item.views = [snapshot(v) for v in bench.views.values()]
        step(i + 1, f"computed item {i + 1} of {len(items)} ({item.title})")
    cells = []
    if lesson_text:
        if check is not None:
            check()
        cells = notebook_cells(bench.lm)
        step(steps, "ran the lesson text of notebook 02")
    return write_lesson(path, title=title, items=items, cells=cells, models=models_line(bench),
                        teaching_set=TEACHING_SET.name if lesson_text else None)


def default_title(items: list[LessonItem], teaching: bool) -> str:
    """The page's title when none is given."""
    if teaching:
        return "Surface form competition: a lesson (the surfacelab teaching set)"
    return f"surfacelab lesson: {items[0].title}" if len(items) == 1 else f"surfacelab lesson: {len(items)} items"
