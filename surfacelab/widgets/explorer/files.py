"""The Explorer's files (a part of the ``Explorer``): the folder, sessions (``explore.save_session`` /
``load_session``), exports (the comparison as CSV / markdown, the summary figure as PNG / HTML) and the report of the
runs (``sl.report``: one page that opens offline), each with the note of what was written (and its download link) or
why it failed."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as w

from ... import explore, tasks
from ...report import report
from ...safecsv import to_csv
from ..kit.files import DEFAULT_EXPORT_DIR, saved_note, write_figure
from ..kit.layout import box, classed, message_html
from .ablation import CODE

if TYPE_CHECKING:
    from ..app import AppPolicy
    from .widget import Explorer

#: The exports offered, by file name in the folder.
EXPORTS = ("comparison.csv", "comparison.md", "summary.png", "summary.html")
#: The report's file name in the folder.
REPORT = "report.html"


class ExplorerFiles:
    """The files of an ``Explorer``: the folder box, save / load session, the export buttons and their note.

    Args:
        host: the explorer (its runs, sources and tasks; its figure and comparison).
        policy: in the app sessions and exports go to the visitor's own folder (the box is hidden and never read).
        folder: the folder the box starts with (None: ``explorer`` in ``DEFAULT_EXPORT_DIR``).
    """

    def __init__(self, host: Explorer, policy: AppPolicy, folder: str | Path | None) -> None:
        self.host, self.policy = host, policy
        self.folder_box = w.Text(value=str(Path(folder).expanduser() if folder else DEFAULT_EXPORT_DIR / "explorer"),
                                 description="folder", style={"description_width": "initial"})
        if policy.app:  # never read in the app (see ``folder``)
            self.folder_box.value, self.folder_box.disabled, self.folder_box.layout.display = "", True, "none"
        self.save_button = w.Button(description="save session", icon="save")
        self.load_button = w.Button(description="load session", icon="folder-open")
        self.export_buttons = {k: w.Button(description=k, icon="download") for k in EXPORTS}
        self.report_button = w.Button(description=REPORT, icon="file-text",
                                      tooltip="the runs as one page to share: opens offline, no install")
        self.note = w.HTML("")
        classed([(self.folder_box, "sl-x-folder"), (self.note, "sl-x-files-note")])
        self.save_button.on_click(lambda _: host.after_fields(lambda: self.handle(self.save_session, "saved")))
        self.load_button.on_click(lambda _: host.after_fields(lambda: self.handle(self.load_session, "loaded")))
        for key, b in self.export_buttons.items():
            b.on_click(lambda _, key=key: host.after_fields(lambda: self.handle(lambda f: self.export(f / key))))
        self.report_button.on_click(lambda _: host.after_fields(lambda: self.handle(lambda f: self.report(f / REPORT))))

    def widgets(self) -> list[w.Widget]:
        """The files row and its note, as laid out at the end of the explorer."""
        return [box([w.HTML("<b>files</b>"), self.folder_box, self.save_button, self.load_button,
                     *self.export_buttons.values(), self.report_button], "sl-x-files"), self.note]

    @property
    def folder(self) -> Path:
        """Where sessions and exports go: the folder box; in the app, ``explorer`` in the visitor's own folder."""
        if self.policy.app:
            return self.policy.visitor_folder() / "explorer"
        return Path(self.folder_box.value.strip()).expanduser()

    def handle(self, action: Callable[[Path], Any], session: str | None = None) -> None:
        """Call ``action(folder)``; the note says what it wrote (a file: with its download link) or why it failed.
        ``session``: what was done to a session (``saved`` / ``loaded``; its folder is named outside the app)."""
        try:
            path = action(self.folder)
            if session is None:
                self.note.value = saved_note(path, app=self.policy.app)
            else:
                where = "" if self.policy.app else f" in <code>{html.escape(str(path))}</code>"
                self.note.value = f"<span class='sl-info'>{session} the session{where}</span>"
        except Exception as err:  # a file failure is a message beside the buttons, not a traceback
            self.note.value = message_html(err, self.policy.public)

    def save_session(self, folder: str | Path) -> Path:
        """Write the runs and their sources to ``folder`` (``explore.save_session``)."""
        host = self.host
        with host.lock:
            return explore.save_session(folder, host.runs, host.sources)

    def load_session(self, folder: str | Path) -> Path:
        """Open the runs a saved session holds in place of the open ones (template edits need a run's task: those
        of runs from local data are loaded again)."""
        host = self.host
        runs, sources = explore.load_session(folder)
        with host.lock:
            host.runs.clear(), host.sources.clear(), host.tasks.clear()
            for name, source in sources.items():
                if "task" in source:
                    try:
                        task = tasks.load(source["task"], source.get("split"), limit=source.get("n"),
                                          variant=source.get("variant", "paper"))
                        parts = {k: v for k, v in (source.get("template") or {}).items() if v and v != CODE}
                        if source.get("domain_premise") and "domain_premise" not in parts:
                            parts["domain_premise"] = explore.as_pattern(source["domain_premise"])
                        host.tasks[name] = explore.retemplate(task, **parts) if parts else task
                    except (ValueError, TypeError, KeyError, OSError):
                        pass  # the run opens; its template cannot be edited
            host.runs.update(runs)
            host.sources.update(sources)
            first = next(iter(sources))
            host.ablation.name_log(first if "log" in sources[first] else None)
            host.refresh()
        return Path(folder)

    def report(self, path: str | Path) -> Path:
        """Write the report of the open runs (``sl.report``, with their sources) to ``path``."""
        host = self.host
        with host.lock:
            runs, sources = dict(host.runs), dict(host.sources)
        if not runs:
            raise ValueError("no run to report yet: run one first")
        return report(runs, Path(path).expanduser(), sources=sources)

    def export(self, path: str | Path) -> Path:
        """Write the comparison (``.csv`` / ``.md``) or the summary figure (``.png`` / ``.html``) to ``path``."""
        path = Path(path).expanduser()
        if path.suffix in (".png", ".html"):
            return write_figure(self.host.figure(), path, standalone=self.policy.app)
        if path.suffix not in (".csv", ".md"):
            raise ValueError(f"path: expected .csv, .md, .png or .html, got {path.name!r}")
        table = self.host.ablation.comparison()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".md":
            path.write_text(explore.comparison_markdown(table), encoding="utf-8")
        else:
            to_csv(table.assign(fixed=table["fixed"].map(" ".join), broken=table["broken"].map(" ".join)), path)
        return path
