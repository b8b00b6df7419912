"""Files the widgets write: the default export folder, unique file names, figures as PNG or as HTML pages that share
one plotly.js beside them, and the note that says a file was written with a link that hands it to the browser."""

from __future__ import annotations

import base64
import html
import mimetypes
from datetime import datetime
from pathlib import Path

import plotly.graph_objects as go
from plotly.offline import get_plotlyjs, get_plotlyjs_version

from ... import viz
from ...paths import write_atomic

#: Where exports and saved states go unless a widget's folder says otherwise (outside any checkout).
DEFAULT_EXPORT_DIR = Path.home() / "surfacelab-exports"
#: The largest export offered as an in-widget download link (a data: URL).
LINK_LIMIT = 12 * 1024 * 1024


def unique_path(folder: Path, stem: str, suffix: str) -> Path:
    """A new file name in ``folder``: ``<stem>-<date>-<time><suffix>``, numbered when that one exists."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    path = folder / f"{stem}-{stamp}{suffix}"
    k = 2
    while path.exists():
        path = folder / f"{stem}-{stamp}-{k}{suffix}"
        k += 1
    return path


def write_figure(fig: go.Figure, path: Path, *, standalone: bool = False) -> Path:
    """Write ``fig`` as PNG (``viz.save``) or as an HTML page that reads plotly.js from the file beside it: one per
    folder and plotly version, written with the first page (again if a copy there is not whole). A page opened
    without that file says where it is. ``standalone``: the page holds plotly.js itself (a file downloaded alone)."""
    if path.suffix != ".html":
        return viz.save(fig, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if standalone:
        path.write_text(fig.to_html(include_plotlyjs=True, full_html=True), encoding="utf-8")
        return path
    js, bundle = path.parent / f"plotly-{get_plotlyjs_version()}.min.js", get_plotlyjs().encode("utf-8")
    if not js.exists() or js.stat().st_size != len(bundle):  # never a half-written copy, readable as the pages are
        write_atomic(js, lambda tmp: tmp.write_bytes(bundle))
    missing = (f"<script>if (!window.Plotly) document.body.insertAdjacentHTML('afterbegin', '<p>This page draws its "
               f"figure with {js.name}, which sits beside it in the export folder: put a copy next to this file."
               "</p>')</script>")
    page = fig.to_html(include_plotlyjs=js.name, full_html=True)
    path.write_text(page.replace("</body>", missing + "</body>", 1), encoding="utf-8")
    return path


def saved_note(path: Path, *, app: bool = False) -> str:
    """HTML: the file ``path`` was written (named, with the folder it is in unless ``app``) and, up to
    ``LINK_LIMIT`` bytes, a download link that hands it to the browser (a data: URL: nothing else serves the file)."""
    link = ""
    if path.stat().st_size <= LINK_LIMIT:
        mime = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        data = base64.b64encode(path.read_bytes()).decode("ascii")
        link = (f" · <a class='sl-download' download='{html.escape(path.name)}' "
                f"href='data:{mime};base64,{data}'>download</a>")
    elif app:
        link = f" · <span class='sl-error'>over {LINK_LIMIT // 2**20} MB: too large to download from the page</span>"
    if app:
        return f"<span class='sl-info'>saved <code>{html.escape(path.name)}</code></span>{link}"
    return (f"<span class='sl-info' title='{html.escape(str(path))}'>saved <code>{html.escape(path.name)}</code> "
            f"in {html.escape(str(path.parent))}</span>{link}")
