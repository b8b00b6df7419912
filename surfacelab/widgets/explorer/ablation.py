"""The Explorer's template ablation (a part of the ``Explorer``): the first run's template as editable fields and
presets (``explore.retemplate`` / ``presets``), the edited run beside the baseline with ``explore.compare`` and the
flipped items (each opens in the workbench)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd

from ... import explore
from ...logs import from_log
from ...runs import item_keys
from ..kit.layout import box, classed
from ..kit.runner import Job

if TYPE_CHECKING:
    from .widget import Explorer

#: What a template field shows for a part given by code (a callable): kept unless typed over.
CODE = "(code)"


def template_text(value: Any) -> str:
    """A template part as a field shows it: its pattern, ``CODE`` for a callable, "" for none."""
    if value is None:
        return ""
    return value if isinstance(value, str) else CODE


class AblationPanel:
    """The template ablation of an ``Explorer``: the preset picker, a field per template part, the run's name and
    button, the comparison table and the flipped items. Reads the explorer (its runs, sources and tasks) and runs
    through it (``Explorer.submit``)."""

    def __init__(self, host: Explorer) -> None:
        self.host = host
        wide = {"description_width": "initial"}
        self.preset_picker = w.Dropdown(options=[], description="preset", style=wide)
        self.premise_pattern = w.Text(description="premise", placeholder="{question} ...", style=wide)
        self.option_pattern = w.Text(description="options", placeholder=" {choice}", style=wide)
        self.domain_pattern = w.Text(description="domain premise", style=wide)
        self.name_box = w.Text(value="edited", description="run name", style=wide)
        self.button = w.Button(description="Run edited template", icon="play")
        self.comparison_html = w.HTML("")
        self.flips = w.VBox([])
        self._template: Any = None  # the preset chosen last (None: the baseline's template)
        self._shown: tuple[str, ...] | None = None  # what the fields showed for it
        self._log_fields: tuple[str, int] | None = None  # (task, n) the source fields show for a log run's items
        classed([(self.preset_picker, "sl-x-preset"), (self.premise_pattern, "sl-x-premise-pattern"),
                 (self.option_pattern, "sl-x-option-pattern"), (self.domain_pattern, "sl-x-domain-pattern"),
                 (self.name_box, "sl-x-ablation-name"), (self.button, "sl-x-ablate"),
                 (self.comparison_html, "sl-x-comparison"), (self.flips, "sl-x-flips")])
        self.preset_picker.observe(lambda ch: self._preset_chosen(ch["new"]), "value")
        self.button.on_click(lambda _: host.after_fields(self.ablate))

    def widgets(self) -> list[w.Widget]:
        """The panel as laid out under the item table."""
        return [w.HTML("<b>template ablation</b> <span class='sl-hint'>(the same items under an edited template, as "
                       "a run beside the first; patterns over the task's fields; "
                       f"{CODE}: the template's code, kept unless typed over)</span>"),
                box([self.preset_picker, self.premise_pattern, self.option_pattern, self.domain_pattern,
                     self.name_box, self.button], "sl-x-ablation"),
                self.comparison_html, self.flips]

    def presets(self) -> None:
        """Offer the presets of the first run's task (after the runs changed)."""
        host = self.host
        base = host.tasks.get(next(iter(host.runs), ""))
        names = list(explore.presets(base)) if base is not None else []
        if list(self.preset_picker.options)[1:] != names:
            self.preset_picker.options = ["(this run)", *names]
            self.preset_picker.value = "(this run)"

    def _preset_chosen(self, name: str | None) -> None:
        host = self.host
        base = host.tasks.get(next(iter(host.runs), ""))
        if base is None or name is None:
            return
        template = base.template if name == "(this run)" else explore.presets(base)[name]
        self._template = template
        self.premise_pattern.value = template_text(template.premise)
        self.option_pattern.value = template_text(template.options if isinstance(template.options, str) or
                                                  callable(template.options) else None)
        self.domain_pattern.value = template_text(template.domain_premise)
        self._shown = (self.premise_pattern.value, self.option_pattern.value, self.domain_pattern.value)

    def ablate(self, *, premise: str | None = None, options: str | None = None, domain_premise: str | None = None,
               name: str | None = None) -> Job | None:
        """Run the first run's items under the edited template (the fields, or these arguments) as a new run beside
        it; None when refused (the message says why). For a log, only the domain premise can change."""
        host = self.host
        for field, value in ((self.premise_pattern, premise), (self.option_pattern, options),
                             (self.domain_pattern, domain_premise)):
            if value is not None:
                field.value = value
        name = name or self.name_box.value.strip() or "edited"
        base_name = next(iter(host.runs), None)
        try:
            if base_name is None:
                raise ValueError("ablation: run or open a baseline first")
            if base_name == name:
                raise ValueError(f"run name: {name!r} is the baseline's; choose another")
            if "log" in host.sources.get(base_name, {}):
                return self._ablate_log(name, base_name)
            base = host.tasks.get(base_name)
            if base is None:
                raise ValueError("ablation: the baseline was opened without its task; run it from the source fields")
            template = self._template if self._template is not None else base.template
            shown = self._shown or (template_text(base.template.premise), None, None)
            parts = {}
            for part, field, was in zip(("premise", "options", "domain_premise"),
                                        (self.premise_pattern, self.option_pattern, self.domain_pattern), shown):
                if field.value != CODE and field.value != (was or "") and (field.value or was):
                    parts[part] = field.value
            task = explore.retemplate(base.with_template(template) if template is not base.template else base,
                                      **parts)
        except (ValueError, TypeError, KeyError) as err:
            host.show_error(err)
            return None
        source = dict(host.sources[base_name], template={k: template_text(v) for k, v in
                                                         (("premise", task.template.premise),
                                                          ("options", task.template.options),
                                                          ("domain_premise", task.template.domain_premise))})
        return host.submit(name, task, source, then=self.show_comparison)

    def _ablate_log(self, name: str, base_name: str) -> Job | None:
        domain = self.domain_pattern.value
        if not domain.strip() or domain == CODE:
            raise ValueError("domain premise: a log is re-scored under a domain premise: type one")
        return self.rescore_log(name, base_name, domain)

    def name_log(self, name: str | None) -> None:
        """Make the explorer's source fields name the items of the log run ``name`` (opened, or of a session; None:
        no log run): Run then scores the log's own strings again beside it (``log_run``)."""
        host = self.host
        if name is None:
            self._log_fields = None
            return
        run = host.runs[name]
        host.task_box.value = f"{host.sources[name].get('reader', 'the')} log: {run.meta.get('log_task', run.task)}"
        host.n_box.value = len(run.items)
        self._log_fields = (host.task_box.value, host.n_box.value)

    def log_run(self) -> str | None:
        """The log run that Run scores again: the first run, when it is a log's and the source fields still name its
        items (``name_log``); None otherwise."""
        host = self.host
        base = next(iter(host.runs), None)
        if base is None or "log" not in host.sources.get(base, {}):
            return None
        return base if (host.task_box.value, host.n_box.value) == self._log_fields else None

    def rescore_log(self, name: str, base_name: str, domain: str | None = None) -> Job | None:
        """Score the strings of the log run ``base_name`` again with the explorer's LM (under the domain premise
        ``domain`` when given), as run ``name`` beside it; None when its log is not there (the message says so)."""
        host = self.host
        path, reader = host.sources[base_name]["log"], host.sources[base_name].get("reader")
        if not Path(path).exists():
            host.show_error(ValueError(
                f"log: the log {path!r} of run {base_name!r} is not there: Run scores the log's own strings again and "
                "needs that file (open it with Explorer(log=...) where it is now, or name a task in the fields)"))
            return None
        host.message.value = ""
        how = f"under {domain}" if domain is not None else "with the LM"
        host.progress_line.value = f"<i>scoring {html.escape(name)} {html.escape(how)}…</i>"

        def work(job: Job) -> None:
            host.put(name, from_log(path, reader=reader, lm=host.get_lm(), domain_premise=domain),
                     {"log": path, "reader": reader, "domain_premise": domain})
            host.progress_line.value = f"{html.escape(name)}: done"
            self.show_comparison()

        return host.runner.submit(work)

    def comparison(self) -> pd.DataFrame:
        """``explore.compare`` of the last run against the first (on the items both have)."""
        runs = self.host.shown()
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
        shown = self.host.shown()
        names = list(shown)
        rows = "".join(
            f"<tr><td>{html.escape(r.scorer)}</td><td>{r.baseline:.1%} [{r.baseline_low:.1%}, {r.baseline_high:.1%}]"
            f"</td><td>{r.run:.1%} [{r.run_low:.1%}, {r.run_high:.1%}]</td><td>{r.p_value:.3g}</td>"
            f"<td>{len(r.fixed)}</td><td>{len(r.broken)}</td></tr>" for r in table.itertuples())
        self.comparison_html.value = (
            f"<b>{html.escape(names[-1])}</b> against <b>{html.escape(names[0])}</b>"
            "<table class='sl-comparison'><tr><th>scorer</th><th>baseline</th><th>run</th><th>McNemar p</th>"
            f"<th>fixed</th><th>broken</th></tr>{rows}</table>")
        ids = item_keys(next(iter(shown.values())).items).tolist()  # as compare names the flipped items
        lines = []
        for r in table.itertuples():
            buttons = []
            for kind, flipped in (("fixed", r.fixed), ("broken", r.broken)):
                for item_id in flipped:
                    b = w.Button(description=f"{kind}: {item_id}", layout=w.Layout(width="auto"),
                                 tooltip=f"{r.scorer}: {kind} by {names[-1]}; open it (as {names[-1]} has it)")
                    b.add_class("sl-opens-item")  # the browser scrolls the workbench into view on the click
                    b.on_click(lambda _, p=ids.index(item_id): self.host.opener.open_item(p, names[-1]))
                    buttons.append(b)
            if buttons:
                lines.append(w.HBox([w.HTML(f"<b>{html.escape(r.scorer)}</b>"), *buttons],
                                    layout=w.Layout(flex_flow="row wrap")))
        self.flips.children = tuple(lines)

    @property
    def flip_buttons(self) -> list[w.Button]:
        """The buttons of the flipped items (fixed, then broken, per scorer)."""
        return [b for line in self.flips.children for b in line.children if isinstance(b, w.Button)]
