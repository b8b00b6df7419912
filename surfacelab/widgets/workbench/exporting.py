"""The Workbench's files (a part of the ``Workbench``): each view exported as PNG / HTML / CSV and the state saved,
under unique names in the export folder, with a download link in the widget.

A PNG or HTML export is the view's figures (one under the other) under a header that says what they show: the
premise, the domain premise, the options with the gold starred and the model (with its server's URL, never its API
key), so that the file alone is enough. The HTML pages read plotly.js from one file beside them in the export folder
(written once per plotly version): a page is then its figure, kilobytes, instead of a 4.8 MB copy of plotly.js each,
and it still opens offline. In the app (``app.AppPolicy``) a visitor gets each file through its download link alone,
so a page holds its own copy of plotly.js there, and the note names the file without the folder it is in.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from textwrap import wrap
from typing import TYPE_CHECKING, Any, Callable

import ipywidgets as w
import plotly.graph_objects as go

from ... import viz
from ..._format import visible
from ...models import MLM
from ...safecsv import to_csv
from ..kit.files import DEFAULT_EXPORT_DIR, saved_note, unique_path, write_figure
from ..kit.layout import classed
from .models import server_url

if TYPE_CHECKING:
    from ..app import AppPolicy
    from .host import Host
    from .inputs import Inputs
    from .views.base import View

#: Plotly's figure height and top margin where a figure sets none (px).
PLOTLY_HEIGHT, PLOTLY_TOP = 450, 100
#: Characters per header line of an exported figure (its 11 px lines across the 700 px of a PNG).
HEADER_WIDTH = 100
#: Lines per header field at most: a longer premise is cut with "…" (the saved state keeps it whole).
HEADER_LINES = 3
#: A title line's height (plotly spaces a 14 px title's lines 1.3 em apart) and the room of the first line hung
#: from the top with its pad, as ``viz.pll_options_spec`` hangs its title.
LINE_PX, TITLE_PX, TITLE_PAD = 18, 64, 26
#: The room of a stacked panel above its plot (its title) and below it (tick labels, the x-axis title).
PANEL_TITLE_PX, PANEL_AXES_PX = 30, 80
#: An axis reference in a figure: letter, number ("" for the first axis) and the " domain" suffix.
AXIS_REF = re.compile(r"^([xy])(\d*)( domain)?$")


def export_row(on_click: Callable[[str], None]) -> tuple[list[w.Button], w.HTML, w.HBox]:
    """A view's export buttons (PNG, HTML, CSV: ``on_click(kind)``), the note beside them and their row."""
    buttons = []
    for kind in ("png", "html", "csv"):
        b = w.Button(description=kind.upper(), tooltip=f"export this view as {kind.upper()}")
        b.add_class(f"sl-export-{kind}")
        b.add_class("sl-export-button")
        b.on_click(lambda _, kind=kind: on_click(kind))
        buttons.append(b)
    note = w.HTML("")
    note.add_class("sl-export-note")
    row = w.HBox([*buttons, note])
    row.add_class("sl-export-row")
    return buttons, note, row


def context(inp: "Inputs", model: Any, needs: tuple[str, ...]) -> list[tuple[str, str]]:
    """What an export of a view with these ``needs`` names, as (label, plain text): the premise and the domain
    premise where the view reads them, the options with the gold starred, and the model with its server's URL (the
    URL alone: it never holds credentials, and the API key stays in the model's backend)."""
    fields = [("premise", visible(inp.premise))] if "premise" in needs else []
    if "domain_premise" in needs:
        fields.append(("domain premise", "none" if inp.domain_premise is None else visible(inp.domain_premise)))
    fields.append(("options" + (" (★ gold)" if inp.gold is not None else " (no gold marked)"),
                   "   ".join(("★ " if i == inp.gold else "") + f"{i + 1}: {visible(o)}"
                              for i, o in enumerate(inp.options))))
    if model is not None:
        where = server_url(model)
        fields.append(("masked LM" if isinstance(model, MLM) else "causal LM",
                       model.name + (f" on {where}" if where else "")))
    return fields


def with_header(spec: dict, title: str, fields: list[tuple[str, str]]) -> dict:
    """The plotly JSON ``spec`` under a title block: ``title`` (a view's) and the figure's own title, then each
    field as "label: text", wrapped and escaped (user text is shown as typed, never read as markup); the figure
    grows by the block's height."""
    layout = dict(spec["layout"])
    own = layout.get("title", {}).get("text", "")
    lines = [viz.esc(line) for label, text in fields
             for line in wrap(f"{label}: {text}", HEADER_WIDTH, max_lines=HEADER_LINES, placeholder=" …")]
    block = (f"<b>{viz.esc(title)}</b>" + (f" · {own}" if own else "")
             + "".join(f"<br><span style='font-size:11px'>{line}</span>" for line in lines))
    margin = dict(layout.get("margin", {}))
    top = margin.get("t", PLOTLY_TOP)
    margin["t"] = max(top, TITLE_PX + LINE_PX * own.count("<br>")) + LINE_PX * len(lines)
    # hung from the top: plotly centres a title's first line in the margin, and the block would run into the plot
    layout["title"] = {**layout.get("title", {}), "text": block, "y": 1, "yref": "container", "yanchor": "top",
                       "pad": {"t": TITLE_PAD}}
    layout.update(margin=margin, height=layout.get("height", PLOTLY_HEIGHT) + margin["t"] - top)
    return {"data": spec["data"], "layout": layout}


def stack(specs: list[dict]) -> dict:
    """One figure of the plotly JSON ``specs``, one under the other, each as tall as it was: each keeps its axes
    (renumbered), shapes and notes, its title (over its panel) and its legend (beside its panel)."""
    total = sum(s["layout"].get("height", PLOTLY_HEIGHT) for s in specs)
    first = specs[0]["layout"]
    out = {"data": [], "layout": {**{k: first[k] for k in ("template", "font") if k in first},
                                  "height": total + 10, "margin": {"l": 10, "r": 10, "t": 0, "b": 10},
                                  "barmode": "group", "annotations": [], "shapes": []}}
    used = {"x": 0, "y": 0}
    top = 0
    for k, spec in enumerate(specs):
        height = spec["layout"].get("height", PLOTLY_HEIGHT)
        band = (1 - (top + height - PANEL_AXES_PX) / total, 1 - (top + PANEL_TITLE_PX) / total)
        top += height
        add_panel(spec, out, band, used, k + 1)
    return out


def add_panel(spec: dict, out: dict, band: tuple[float, float], used: dict[str, int], n: int) -> None:
    """Add ``spec`` as the ``n``-th panel of the stacked figure ``out``, in the paper heights ``band`` (low, high):
    its axes numbered on from ``used`` (the axes taken so far, counted by letter), its paper heights scaled into
    the band, its legend beside the band. Bars are grouped: an overlaid panel's bars share one offset group."""
    low, high = band

    def scaled(y: float) -> float:
        return low + y * (high - low)

    panel = spec["layout"]
    if panel.get("barmode", "group") not in ("group", "overlay"):
        raise ValueError(f"specs: panel {n} stacks its bars ({panel['barmode']}); only grouped or overlaid bars stack")
    pairs: dict[str, str] = {}  # each axis -> the counter axis of the first trace drawn on it (its default anchor)
    for t in spec["data"]:
        if "domain" not in t:
            x, y = t.get("xaxis", "x"), t.get("yaxis", "y")
            pairs.setdefault(x, y)
            pairs.setdefault(y, x)
    refs = set(pairs) | {key[0] + key[5:] for key in panel if re.fullmatch(r"[xy]axis\d*", key)}
    names = {}
    for ref in sorted(refs, key=lambda r: (r[0], int(r[1:] or 1))):
        used[ref[0]] += 1
        names[ref] = ref[0] + (str(used[ref[0]]) if used[ref[0]] > 1 else "")

    def renamed(ref: str) -> str:
        m = AXIS_REF.match(ref)
        return names[m[1] + m[2]] + (m[3] or "") if m else ref  # "paper" stays

    layout = out["layout"]
    for ref, name in names.items():
        axis = dict(panel.get(f"{ref[0]}axis{ref[1:]}", {}))
        for key in ("anchor", "matches", "overlaying", "scaleanchor"):
            if key in axis:
                axis[key] = renamed(axis[key])
        if ref in pairs:
            axis.setdefault("anchor", names[pairs[ref]])
        if ref[0] == "y":
            axis["domain"] = [scaled(v) for v in axis.get("domain", [0, 1])]
        layout[f"{name[0]}axis{name[1:]}"] = axis
    legend = "legend" if n == 1 else f"legend{n}"
    shown = panel.get("showlegend") is not False
    if shown:
        layout[legend] = {**panel.get("legend", {}), "orientation": "v", "x": 1.02, "xanchor": "left", "y": high,
                          "yanchor": "top"}
    for t in spec["data"]:
        t = dict(t)
        if "domain" in t:
            t["domain"] = {**t["domain"], "y": [scaled(v) for v in t["domain"].get("y", [0, 1])]}
        else:
            t["xaxis"], t["yaxis"] = names[t.get("xaxis", "x")], names[t.get("yaxis", "y")]
        if t.get("type") == "bar" and panel.get("barmode") == "overlay":
            t["offsetgroup"] = f"panel{n}"
        if shown:
            t["legend"] = legend
        else:
            t["showlegend"] = False
        out["data"].append(t)
    for kind, heights in (("annotations", ("y",)), ("shapes", ("y0", "y1"))):
        for item in panel.get(kind, []):
            item = dict(item)
            paper = item.get("yref", "y") == "paper"
            item["xref"], item["yref"] = renamed(item.get("xref", "x")), renamed(item.get("yref", "y"))
            if paper:
                item.update({k: scaled(item[k]) for k in heights if k in item})
            layout[kind].append(item)
    title = panel.get("title", {}).get("text", "")
    if title:
        layout["annotations"].append({"text": title, "xref": "paper", "yref": "paper", "x": 0, "xanchor": "left",
                                      "y": high, "yanchor": "bottom", "yshift": 6, "showarrow": False,
                                      "font": {"size": 13}})


def save_view(view: "View", path: Path, *, standalone: bool = False) -> Path:
    """Write ``view``'s main frame (``.csv``), or its figures under the header of what they show (``.png`` /
    ``.html``; ``standalone``: see ``write_figure``): the inputs and the model its numbers are for, and the view's own
    fields (``View.export_parts``)."""
    if path.suffix == ".csv":
        data = view.data
        if data is None:
            raise ValueError(f"view {view.name!r}: no data to export ({view.message or 'not computed yet'})")
        path.parent.mkdir(parents=True, exist_ok=True)
        # list cells (token ids and the like) have no CSV form: they are left out
        to_csv(data.drop(columns=[c for c in data.columns if data[c].dtype == object
                                  and data[c].map(lambda v: isinstance(v, (list, tuple))).any()]), path)
        return path
    specs, fields = view.export_parts()
    if not specs:
        raise ValueError(f"view {view.name!r}: no figure to export ({view.message or 'not computed yet'})")
    inp, model = view.shown_for
    spec = with_header(specs[0] if len(specs) == 1 else stack(specs), view.title,
                       context(inp, model, view.needs) + fields)
    return write_figure(go.Figure(spec), path, standalone=standalone)


class Exporter:
    """The files of a ``Workbench``: the export folder box, "save state", the note beside them, ``export`` and the
    views' export buttons (``clicked``).

    Args:
        host: the workbench (``Host``): its views, what it shows (``catch_up``) and its state (``examples``).
        policy: in the app every file goes to the visitor's own folder (the box is hidden and never read).
        export_dir: the folder the box starts with (None: ``DEFAULT_EXPORT_DIR``).
    """

    def __init__(self, host: Host, policy: AppPolicy, export_dir: str | Path | None) -> None:
        self.host, self.policy = host, policy
        self.folder_box = w.Text(value=str(Path(export_dir).expanduser().resolve() if export_dir is not None
                                           else DEFAULT_EXPORT_DIR), description="export folder",
                                 style={"description_width": "initial"})
        if policy.app:  # the visitor's own folder, never read from the box (see ``export_dir``)
            self.folder_box.value, self.folder_box.disabled = "", True
            self.folder_box.layout.display = "none"
        self.save_button = w.Button(description="save state", icon="save", tooltip="save the inputs and models as JSON")
        self.note = w.HTML("")
        classed([(self.folder_box, "sl-export-dir"), (self.save_button, "sl-save-state"),
                 (self.note, "sl-files-note")])
        self.save_button.on_click(lambda _: self._save_clicked())

    @property
    def export_dir(self) -> Path:
        """The folder exports and saved states go to: the "export folder" box; in the app the visitor's own folder
        (whatever the box holds)."""
        if self.policy.app:
            return self.policy.visitor_folder()
        text = self.folder_box.value.strip()
        return Path(text).expanduser() if text else DEFAULT_EXPORT_DIR

    def unique(self, stem: str, suffix: str) -> Path:
        """A new file name in the export folder."""
        return unique_path(self.export_dir, stem, suffix)

    def saved(self, path: Path) -> str:
        """The note that ``path`` was written, with its download link (``kit.files.saved_note``)."""
        return saved_note(path, app=self.policy.app)

    def failed(self, what: str, err: BaseException) -> str:
        """The note that ``what`` failed, and why (naming no place on the host in the app)."""
        return f"<span class='sl-error'>⚠ {what}: {html.escape(self.policy.public(str(err)))}</span>"

    def clicked(self, name: str, kind: str) -> None:
        """A view's export button: write view ``name`` as ``kind`` into the export folder under a unique name; the
        note beside the buttons says where (with a download link), or why it failed."""
        view = self.host.views[name]
        view.export_note.value = f"<span class='sl-hint'>exporting {kind.upper()}…</span>"
        for b in view.export_buttons:  # one export at a time: a second click would only queue behind it
            b.disabled = True
        try:
            path = self.export(name, self.unique(name, f".{kind}"))
            view.export_note.value = self.saved(path)
        except Exception as err:  # an export failure is a message next to the button, not a traceback
            view.export_note.value = self.failed("export failed", err)
        finally:
            for b in view.export_buttons:
                b.disabled = False

    def _save_clicked(self) -> None:
        try:
            self.note.value = self.saved(self.host.examples.save_state(self.unique("state", ".json")))
        except Exception as err:
            self.note.value = self.failed("could not save", err)

    def export(self, view: str, path: str | Path) -> Path:
        """Write one view as PNG or HTML (its figures under the header of what they show: ``save_view``) or CSV
        (its main frame), chosen by the suffix of ``path`` (``View.save``)."""
        views = self.host.views
        if view not in views:
            raise ValueError(f"view: unknown view {view!r}; known: {', '.join(views)}")
        self.host.catch_up()
        return views[view].save(Path(path).expanduser())
