"""The Workbench's files: each view exported as PNG / HTML / CSV and the state saved, under unique names in
the export folder, with a download link in the widget (a mixin of ``Workbench``)."""

from __future__ import annotations

import base64
import html
import mimetypes
from datetime import datetime
from pathlib import Path

#: Where exports and saved states go unless ``export_dir`` says otherwise (outside any checkout).
DEFAULT_EXPORT_DIR = Path.home() / "surfacelab-exports"
#: The largest export offered as an in-widget download link (a data: URL).
LINK_LIMIT = 12 * 1024 * 1024


class Exports:
    """The export part of ``Workbench``: the export folder, the export buttons, ``export`` and saving the state."""

    @property
    def export_dir(self) -> Path:
        """The folder exports and saved states go to (the "export folder" box)."""
        text = self.export_box.value.strip()
        return Path(text).expanduser() if text else DEFAULT_EXPORT_DIR

    def _unique(self, stem: str, suffix: str) -> Path:
        stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
        path = self.export_dir / f"{stem}-{stamp}{suffix}"
        k = 2
        while path.exists():
            path = self.export_dir / f"{stem}-{stamp}-{k}{suffix}"
            k += 1
        return path

    def _saved_note(self, path: Path) -> str:
        link = ""
        if path.stat().st_size <= LINK_LIMIT:
            mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            link = (f" · <a class='sl-download' download='{html.escape(path.name)}' "
                    f"href='data:{mime};base64,{data}'>download</a>")
        return (f"<span class='sl-info' title='{html.escape(str(path))}'>saved <code>{html.escape(path.name)}</code> "
                f"in {html.escape(str(path.parent))}</span>{link}")

    def _export_clicked(self, name: str, kind: str) -> None:
        view = self.views[name]
        view.export_note.value = f"<span class='sl-hint'>exporting {kind.upper()}…</span>"
        for b in view.export_buttons:  # one export at a time: a second click would only queue behind it
            b.disabled = True
        try:
            path = self.export(name, self._unique(name, f".{kind}"))
            view.export_note.value = self._saved_note(path)
        except Exception as err:  # an export failure is a message next to the button, not a traceback
            view.export_note.value = f"<span class='sl-error'>⚠ export failed: {html.escape(str(err))}</span>"
        finally:
            for b in view.export_buttons:
                b.disabled = False

    def _save_clicked(self) -> None:
        try:
            self.files_note.value = self._saved_note(self.save_state(self._unique("state", ".json")))
        except Exception as err:
            self.files_note.value = f"<span class='sl-error'>⚠ could not save: {html.escape(str(err))}</span>"

    def export(self, view: str, path: str | Path) -> Path:
        """Write one view as PNG, HTML (its figure) or CSV (its main frame), chosen by the suffix of ``path``."""
        if view not in self.views:
            raise ValueError(f"view: unknown view {view!r}; known: {', '.join(self.views)}")
        self._catch_up()
        return self.views[view].save(Path(path).expanduser())
