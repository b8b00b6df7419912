"""The Workbench's "export lesson" button (a part of the ``Workbench``): a lesson page of the item shown or of the
teaching set, built in the background with progress and a cancel (``lesson.build``), on a second Workbench that is
not live and shares the first's models, so the views shown never change."""

from __future__ import annotations

import html
from pathlib import Path
from textwrap import shorten
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as w

from ...engine import Cancelled
from ..kit.layout import classed
from ..kit.runner import Job, Runner
from ..lesson.build import build_lesson, check_path, default_title, lesson_items

if TYPE_CHECKING:
    from ..app import AppPolicy
    from .host import Host


class LessonButton:
    """The "export lesson" picker and button of a ``Workbench``, and ``export``.

    Args:
        host: the workbench (``Host``): the state shown and the exporter (the folder, the note beside the buttons).
        policy: in the app a lesson is of the item shown: the teaching set's (30 items, 388-764 s here,
            docs/lesson.md) would hold the CPU a class shares for minutes.
        make_workbench: a new Workbench that is not live, with the host's models, that builds the lesson (and is
            closed after it).
    """

    def __init__(self, host: Host, policy: AppPolicy, make_workbench: Callable[[], Any]) -> None:
        self.host, self.policy, self.make_workbench = host, policy, make_workbench
        choices = [("this item", "item")] + ([] if policy.app else [("the teaching set", "teaching")])
        self.picker = w.Dropdown(options=choices, value="item", description="lesson of",
                                 layout=w.Layout(width="auto"))
        self.button = w.Button(description="export lesson", icon="book",
                               tooltip="write one HTML page with every view, which opens in any browser without "
                                       "Jupyter or a kernel")
        classed([(self.picker, "sl-lesson-picker"), (self.button, "sl-export-lesson")])
        self.button.on_click(lambda _: self._clicked())
        self.runner = Runner("surfacelab-lesson", on_progress=self._progress)
        self._building: Any = None  # the Workbench computing a lesson, while one is built
        self._job: Job | None = None
        self._started = False  # the build submitted last has begun

    def export(self, items: Any = "item", path: str | Path | None = None, *,
               progress: Callable[[float, str], None] | None = None,
               check: Callable[[], None] | None = None) -> Path:
        """Write a lesson page (``sl.lesson``) computed with the workbench's models: ``items`` "item" (the inputs
        shown), "teaching" or anything ``sl.lesson`` takes; ``path`` None: a new file in the export folder.
        ``progress(fraction, note)`` hears after each item; ``check()`` may raise ``Cancelled`` between items."""
        if isinstance(items, str) and items == "item":
            state = self.host.examples.state()
            items = [dict(state, title=shorten(state["premise"], 60, placeholder=" …") or "this item")]
        found, teaching = lesson_items(items)
        out = check_path(path) if path is not None else self.host.exporter.unique("lesson", ".html")
        bench = self._building = self.make_workbench()
        try:
            return build_lesson(bench, found, out, title=default_title(found, teaching), lesson_text=teaching,
                                progress=progress, check=check)
        finally:
            self._building = None
            bench.close()

    def _clicked(self) -> None:
        note = self.host.exporter.note
        if not self.runner.idle:  # a build is waiting or running: the button cancels it
            self.runner.cancel()
            if self._building is not None:
                self._building.updates.close()  # its forward pass stops at the next layer
            if self._job is not None and self._job.wait(0) and not self._started:  # dropped before it began
                note.value = "<span class='sl-hint'>lesson cancelled</span>"
                self.button.description, self.button.icon = "export lesson", "book"
            return
        which = self.picker.value
        self.button.description, self.button.icon = "cancel lesson", "stop"
        note.value = "<span class='sl-hint'>building the lesson…</span>"
        self._started = False

        def work(job: Job) -> None:
            self._started = True
            try:
                note.value = self.host.exporter.saved(self.export(which, progress=job.progress, check=job.check))
            except Cancelled:
                note.value = "<span class='sl-hint'>lesson cancelled</span>"
            except Exception as err:  # a failed build is a message beside the button, not a traceback
                said = "lesson cancelled" if job.cancelled else f"⚠ lesson failed: {self.policy.public(str(err))}"
                note.value = f"<span class='sl-error'>{html.escape(said)}</span>"
            finally:
                self.button.description, self.button.icon = "export lesson", "book"

        self._job = self.runner.submit(work)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until no lesson is being built (scripts, tests); False on timeout."""
        return self.runner.wait(timeout)

    def close(self) -> None:
        """Stop a lesson being built (the workbench is closing) and refuse later builds."""
        self.runner.close()
        if self._building is not None:
            self._building.updates.close()

    def _progress(self, fraction: float | None, note: str | None) -> None:
        done = f"{fraction:.0%} · " if fraction is not None else ""
        self.host.exporter.note.value = f"<span class='sl-hint'>lesson: {done}{html.escape(note or '')}</span>"
