"""``sl.lesson``: a lesson as one HTML file that opens offline in any browser, with no install and no kernel.

>>> sl.lesson("teaching", "lesson.html")                      # the teaching set + notebook 02's text  # doctest: +SKIP
>>> sl.lesson([{"premise": "The man took a bath in the", "domain_premise": " the",
...             "options": [" bathtub", " sink"], "gold": 0}], "bath.html")                         # doctest: +SKIP
>>> sl.lesson("~/surfacelab-exports", "saved.html")           # every saved state in a folder      # doctest: +SKIP

Every item's views are computed by a ``Workbench`` that is not live (``build``) and written by
``page``; docs/lesson.md says how a teacher makes and hands out the file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable

from tqdm.auto import tqdm

from .build import build_lesson, check_path, default_title, lesson_items
from ..workbench.widget import Workbench


def lesson(items: Any, path: str | Path, *, lm: Any = None, mlm: Any = None, title: str | None = None,
           lesson_text: bool | None = None, top_k: int = 5,
           progress: bool | Callable[[float, str], None] = True) -> Path:
    """Write a lesson page: for each item its premise, options and every workbench view as computed (scorer table,
    token heatmap with its hover, paraphrase mass, letters, PLL, Why) with their readings in words, previous / next
    and a list; for the teaching set, also the text of notebook 02 with its exercises (answers folded).

    Args:
        items: "teaching" (the teaching set), a list of items (dicts with premise, domain_premise, options and
            optionally paraphrases (one "form, form" string per option), gold, title; or teaching-set items as
            ``load_teaching_set`` returns them), a saved-state ``.json`` file or a folder of them (read as data
            only; the states' model names and servers are not followed).
        path: the ``.html`` file to write (its folder is created).
        lm, mlm: the models (loaded, or preset names; default: the workbench's defaults).
        title: the page's title (default: from the items).
        lesson_text: add notebook 02's text and exercises (None: when the items are the packaged teaching set's).
        top_k: alternatives per token in the token heatmap's hover.
        progress: a progress bar (True), none (False), or ``progress(fraction, note)`` called after each item.

    Returns:
        The path written.
    """
    out = check_path(path)
    found, teaching = lesson_items(items)
    if lesson_text is not None and not isinstance(lesson_text, bool):
        raise TypeError(f"lesson_text: expected True, False or None, got {type(lesson_text).__name__}")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title: expected a string or None, got {type(title).__name__}")
    if not (isinstance(progress, bool) or callable(progress)):
        raise TypeError(f"progress: expected True, False or a function (fraction, note), got {type(progress).__name__}")
    text = teaching if lesson_text is None else lesson_text
    bench = Workbench(lm=lm, mlm=mlm, live=False, top_k=top_k)
    bar = tqdm(total=1.0, file=sys.stderr, bar_format="lesson {percentage:3.0f}%|{bar:20}| {desc}") \
        if progress is True else None

    def report(fraction: float, note: str) -> None:
        if bar is not None:
            bar.n = round(fraction, 4)
            bar.set_description_str(note)
        elif callable(progress):
            progress(fraction, note)

    try:
        return build_lesson(bench, found, out, title=title or default_title(found, teaching), lesson_text=text,
                            progress=report if progress else None)
    finally:
        if bar is not None:
            bar.close()
        bench.close()
