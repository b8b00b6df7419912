"""The Explorer's template ablation and files (a mixin of ``widgets.explorer.Explorer``): the current run's
template as editable fields and presets (``explore.retemplate`` / ``presets``), the edited run beside the baseline
with ``explore.compare`` and the flipped items (each opens in the workbench), sessions (``explore.save_session`` /
``load_session``) and exports (the comparison as CSV / markdown, the summary figure as PNG / HTML)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import ipywidgets as w
import pandas as pd

from .. import explore, tasks
from ..lm_eval_log import from_lm_eval
from ..safecsv import to_csv
from .exporting import write_figure
from .scheduler import Run

#: What a template field shows for a part given by code (a callable): kept unless typed over.
CODE = "(code)"


def message_html(err: BaseException) -> str:
    """An error as the one line a widget shows (escaped)."""
    return f"<span class='sl-error'>⚠ {html.escape(str(err) or type(err).__name__)}</span>"


def template_text(value: Any) -> str:
    """A template part as a field shows it: its pattern, ``CODE`` for a callable, "" for none."""
    if value is None:
        return ""
    return value if isinstance(value, str) else CODE


class Ablation:
    """The ablation and files part of ``Explorer`` (its widgets are made by ``Explorer``)."""

    # --- template ablation ------------------------------------------------------------------

    def _presets(self) -> None:
        base = self.tasks.get(next(iter(self.runs), ""))
        names = list(explore.presets(base)) if base is not None else []
        if list(self.preset_picker.options)[1:] != names:
            self.preset_picker.options = ["(this run)", *names]
            self.preset_picker.value = "(this run)"

    def _preset_chosen(self, name: str | None) -> None:
        base = self.tasks.get(next(iter(self.runs), ""))
        if base is None or name is None:
            return
        template = base.template if name == "(this run)" else explore.presets(base)[name]
        self._ablation_template = template
        self.premise_pattern.value = template_text(template.premise)
        self.option_pattern.value = template_text(template.options if isinstance(template.options, str) or
                                          callable(template.options) else None)
        self.domain_pattern.value = template_text(template.domain_premise)
        self._shown_patterns = (self.premise_pattern.value, self.option_pattern.value, self.domain_pattern.value)

    def ablate(self, *, premise: str | None = None, options: str | None = None, domain_premise: str | None = None,
               name: str | None = None) -> Run | None:
        """Run the first run's items under the edited template (the fields, or these arguments) as a new run beside
        it; None when refused (the message says why). For an lm-eval log, only the domain premise can change."""
        for box, value in ((self.premise_pattern, premise), (self.option_pattern, options),
                           (self.domain_pattern, domain_premise)):
            if value is not None:
                box.value = value
        name = name or self.ablation_name.value.strip() or "edited"
        base_name = next(iter(self.runs), None)
        try:
            if base_name is None:
                raise ValueError("ablation: run or open a baseline first")
            if base_name == name:
                raise ValueError(f"run name: {name!r} is the baseline's; choose another")
            if "log" in self.sources.get(base_name, {}):
                return self._ablate_log(name, base_name)
            base = self.tasks.get(base_name)
            if base is None:
                raise ValueError("ablation: the baseline was opened without its task; run it from the source fields")
            template = getattr(self, "_ablation_template", base.template)
            shown = getattr(self, "_shown_patterns", (template_text(base.template.premise), None, None))
            parts = {}
            for part, box, was in zip(("premise", "options", "domain_premise"),
                                      (self.premise_pattern, self.option_pattern, self.domain_pattern), shown):
                if box.value != CODE and box.value != (was or "") and (box.value or was):
                    parts[part] = box.value
            task = explore.retemplate(base.with_template(template) if template is not base.template else base,
                                      **parts)
        except (ValueError, TypeError, KeyError) as err:
            self._show_error(err)
            return None
        source = dict(self.sources[base_name], template={k: template_text(v) for k, v in
                                                         (("premise", task.template.premise),
                                                          ("options", task.template.options),
                                                          ("domain_premise", task.template.domain_premise))})
        return self._submit(name, task, source, then=self.show_comparison)

    def _ablate_log(self, name: str, base_name: str) -> Run:
        domain = self.domain_pattern.value
        if not domain.strip() or domain == CODE:
            raise ValueError("domain premise: an lm-eval log is re-scored under a domain premise: type one")
        path = self.sources[base_name]["log"]
        self.message.value = ""
        self.progress_line.value = f"<i>scoring {html.escape(name)} under {html.escape(domain)!s}…</i>"

        def job(run: Run) -> None:
            self._put(name, from_lm_eval(path, lm=self.get_lm(), domain_premise=domain),
                      {"log": path, "domain_premise": domain})
            self.progress_line.value = f"{html.escape(name)}: done"
            self.show_comparison()

        return self.runner.submit(job)

    def comparison(self) -> pd.DataFrame:
        """``explore.compare`` of the last run against the first (on the items both have)."""
        runs = self.shown()
        if len(runs) < 2:
            raise ValueError("comparison: needs two runs (run an edited template first)")
        names = list(runs)
        return explore.compare(runs[names[0]], runs[names[-1]])

    def show_comparison(self) -> None:
        """Show the comparison table and the flipped items (each a button that opens it)."""
        try:
            table = self.comparison()
        except ValueError as err:
            self.comparison_html.value = f"<i>{html.escape(str(err))}</i>"
            return
        names = list(self.shown())
        rows = "".join(
            f"<tr><td>{html.escape(r.scorer)}</td><td>{r.baseline:.1%} [{r.baseline_low:.1%}, {r.baseline_high:.1%}]"
            f"</td><td>{r.run:.1%} [{r.run_low:.1%}, {r.run_high:.1%}]</td><td>{r.p_value:.3g}</td>"
            f"<td>{len(r.fixed)}</td><td>{len(r.broken)}</td></tr>" for r in table.itertuples())
        self.comparison_html.value = (
            f"<b>{html.escape(names[-1])}</b> against <b>{html.escape(names[0])}</b>"
            "<table class='sl-comparison'><tr><th>scorer</th><th>baseline</th><th>run</th><th>McNemar p</th>"
            f"<th>fixed</th><th>broken</th></tr>{rows}</table>")
        ids = next(iter(self.shown().values())).items["id"].astype(str).tolist()
        lines = []
        for r in table.itertuples():
            buttons = []
            for kind, flipped in (("fixed", r.fixed), ("broken", r.broken)):
                for item_id in flipped:
                    b = w.Button(description=f"{kind}: {item_id}", layout=w.Layout(width="auto"),
                                 tooltip=f"{r.scorer}: {kind} by {names[-1]}; open it (as {names[-1]} has it)")
                    b.add_class("sl-opens-item")  # the browser scrolls the workbench into view on the click
                    b.on_click(lambda _, p=ids.index(item_id): self.open_item(p, names[-1]))
                    buttons.append(b)
            if buttons:
                lines.append(w.HBox([w.HTML(f"<b>{html.escape(r.scorer)}</b>"), *buttons],
                                    layout=w.Layout(flex_flow="row wrap")))
        self.flips.children = tuple(lines)

    @property
    def flip_buttons(self) -> list[w.Button]:
        """The buttons of the flipped items (fixed, then broken, per scorer)."""
        return [b for line in self.flips.children for b in line.children if isinstance(b, w.Button)]

    # --- files ------------------------------------------------------------------------------

    def _files(self, action: Any) -> None:
        try:
            path = action(Path(self.folder_box.value.strip()).expanduser())
            self.files_note.value = f"<span class='sl-info'>done: <code>{html.escape(str(path))}</code></span>"
        except Exception as err:  # a file failure is a message beside the buttons, not a traceback
            self.files_note.value = message_html(err)

    def save_session(self, folder: str | Path) -> Path:
        """Write the runs and their sources to ``folder`` (``explore.save_session``)."""
        with self._lock:
            return explore.save_session(folder, self.runs, self.sources)

    def load_session(self, folder: str | Path) -> Path:
        """Open the runs a saved session holds in place of the open ones (template edits need a run's task: those
        of runs from local data are loaded again)."""
        runs, sources = explore.load_session(folder)
        with self._lock:
            self.runs.clear(), self.sources.clear(), self.tasks.clear()
            for name, source in sources.items():
                if "task" in source:
                    try:
                        task = tasks.load(source["task"], source.get("split"), limit=source.get("n"),
                                          variant=source.get("variant", "code"))
                        parts = {k: v for k, v in (source.get("template") or {}).items() if v and v != CODE}
                        if source.get("domain_premise") and "domain_premise" not in parts:
                            parts["domain_premise"] = source["domain_premise"]
                        self.tasks[name] = explore.retemplate(task, **parts) if parts else task
                    except (ValueError, TypeError, KeyError, OSError):
                        pass  # the run opens; its template cannot be edited
            self.runs.update(runs)
            self.sources.update(sources)
            self.refresh()
        return Path(folder)

    def export(self, path: str | Path) -> Path:
        """Write the comparison (``.csv`` / ``.md``) or the summary figure (``.png`` / ``.html``) to ``path``."""
        path = Path(path).expanduser()
        if path.suffix in (".png", ".html"):
            return write_figure(self.figure(), path)
        if path.suffix not in (".csv", ".md"):
            raise ValueError(f"path: expected .csv, .md, .png or .html, got {path.name!r}")
        table = self.comparison()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".md":
            path.write_text(explore.comparison_markdown(table), encoding="utf-8")
        else:
            to_csv(table.assign(fixed=table["fixed"].map(" ".join), broken=table["broken"].map(" ".join)), path)
        return path
