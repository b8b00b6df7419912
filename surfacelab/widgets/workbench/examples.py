"""The Workbench's examples and saved states (a part of the ``Workbench``): the examples picker (the teaching set,
the datasets' first items, the saved states of the export folder), loading an example or a run's item (with where it
came from and previous / next), and the state (the JSON file ``state.read_state`` reads)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from textwrap import shorten
from typing import TYPE_CHECKING, Callable

import ipywidgets as w

from ...paraphrase import load_teaching_set
from ...tasks import load as load_task
from ..app import NO_SERVER, AppPolicy
from ..kit.layout import classed
from .inputs import Problem
from .state import STATE_FORMAT, read_state

if TYPE_CHECKING:
    from .host import Host

DATASETS = ("copa", "arc-challenge", "openbookqa", "commonsenseqa", "sst-2", "mmlu")
CUSTOM = "(custom)"
TEACHING = "teaching set"
SAVED = "saved states"


def teaching_example(item: dict) -> dict:
    """A teaching-set item (``load_teaching_set``) as the workbench's example: each concept's first form is its
    option and the other forms its paraphrases (as typed: comma-separated, without their leading space, which they
    take from the option); the answer's concept is the gold."""
    forms = list(item["concepts"].values())
    return {"premise": item["premise"], "domain_premise": item["domain_premise"], "options": [f[0] for f in forms],
            "paraphrases": [", ".join(x.strip() for x in f[1:]) for f in forms],
            "gold": list(item["concepts"]).index(item["answer"])}


class ExampleSource:
    """Where a ``Workbench``'s inputs come from: the source and item pickers, ``load`` (an example or a saved state),
    ``load_item`` (a run's item, with its origin line and previous / next), and ``state`` / ``save_state``.

    Attributes:
        notes: notices about the example loaded last (what the app ignored of it), shown with the inputs' problems.
    """

    def __init__(self, host: Host, policy: AppPolicy) -> None:
        self.host, self.policy = host, policy
        self.notes: list[Problem] = []
        self._examples: dict[str, dict] = {}
        self._steps: dict[int, Callable[[], None] | None] = {}
        self.source_picker = w.Dropdown(options=[CUSTOM, TEACHING, *DATASETS, SAVED], value=CUSTOM,
                                        description="examples")
        self.item_picker = w.Dropdown(options=[], description="item")
        # where a loaded item came from (``load_item``) and previous / next within its list (hidden until then)
        self.origin = w.HTML("")
        self.previous_button = w.Button(description="previous", icon="arrow-left", layout=w.Layout(width="auto"))
        self.next_button = w.Button(description="next", icon="arrow-right", layout=w.Layout(width="auto"))
        self.origin_row = w.HBox([self.origin, self.previous_button, self.next_button],
                                 layout=w.Layout(display="none"))
        classed([(self.source_picker, "sl-example-source"), (self.item_picker, "sl-example-picker"),
                 (self.origin_row, "sl-origin")])
        self.source_picker.observe(lambda ch: self._source_changed(ch["new"]), "value")
        self.item_picker.observe(lambda ch: self._chosen(ch["new"]), "value")
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))

    def _source_changed(self, source: str) -> None:
        host = self.host
        host.message.value = ""
        try:
            self._examples = self._load_examples(source)
        except (ValueError, TypeError, OSError) as err:
            self._examples = {}
            host.show_messages([Problem(f"examples: {err}")])
        with host.holding():
            self.item_picker.options = list(self._examples)
            self.item_picker.value = None
        if self._examples:
            self.item_picker.value = next(iter(self._examples))
        elif source == SAVED:
            where = host.exporter.export_dir
            host.show_messages([Problem(self.policy.public(f"No saved states in {where}: use “save state” first."),
                                        blocking=False)])

    def _load_examples(self, source: str) -> dict[str, dict]:
        if source == CUSTOM:
            return {}
        if source == SAVED:
            out = {}
            folder = self.host.exporter.export_dir
            for path in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
                try:
                    out[path.name] = read_state(path)
                except ValueError:
                    continue  # some other JSON file in the folder
            return out
        if source == TEACHING:
            return {f"{it['id']}: {shorten(it['premise'], 50, placeholder=' …')}": teaching_example(it)
                    for it in load_teaching_set()}
        task = load_task(source, limit=20)
        return {f"{it.id}: {shorten(it.premise, 50, placeholder=' …')}": {
            "premise": it.premise, "domain_premise": it.domain_premise, "options": list(it.options),
            "paraphrases": [""] * len(it.options), "gold": it.gold} for it in task if it.premise_per_option is None}

    def load(self, example: dict) -> None:
        """Fill every field from ``example`` (premise, domain_premise, options, paraphrases, gold; and lm, server,
        mlm when given, as in a saved state). In the app a server other than the app's, or a model that is not one
        of the pickers', is ignored with a note: nothing a file names is contacted or loaded."""
        host, models = self.host, self.host.models
        self.policy.caps.check_options(len(example["options"]))  # before any field changes
        notes = []
        with host.holding():
            if "server" in example and self.policy.app:
                if (example["server"] or "") != models.fixed_server:
                    notes.append(Problem(f"The server this example names, "
                                         f"{shorten(str(example['server'] or ''), 80, placeholder=' …')!r}, is "
                                         f"ignored: this app's is fixed ({models.fixed_server or NO_SERVER}).",
                                         blocking=False, kind="file"))
            elif "server" in example:
                models.server_box.value = example["server"] or ""
            for key, picker in (("lm", models.lm_picker), ("mlm", models.mlm_picker)):
                if example.get(key):
                    if example[key] not in picker.options and self.policy.app:
                        notes.append(Problem(f"The {picker.description} this example names, "
                                             f"{shorten(example[key], 80, placeholder=' …')!r}, is not one of this "
                                             "app's: ignored.", blocking=False, kind="file"))
                        continue
                    if example[key] not in picker.options:
                        picker.options = [*picker.options, example[key]]
                    picker.value = example[key]
            if "chat_template" in example:  # a saved state's: the model's own template, or plain text
                host.chat_choice, host.chat_box.value = True, example["chat_template"]
            host.premise_box.value = example["premise"]
            host.domain_box.value = example.get("domain_premise") or ""
            for view in host.views.values():  # choices and messages about the previous example
                view.forget()
            host.set_options(example["options"], example.get("paraphrases"), gold=example.get("gold"))
        self.notes = notes
        host.edited(0)

    def load_item(self, premise: str, options: list[str], *, domain_premise: str | None = None,
                  gold: int | None = None, source: str | None = None,
                  previous: Callable[[], None] | None = None, next: Callable[[], None] | None = None) -> None:
        """Load one item of a dataset run exactly as scored (premise, options, domain premise, gold; no
        paraphrases) in one update pass, and show where it came from (``source``, a line under the title) with
        previous / next buttons that call ``previous`` / ``next`` (disabled when None)."""
        self._steps = {-1: previous, 1: next}
        # chat_template False: the strings are those scored, rendered already under a chat template
        self.load({"premise": premise, "domain_premise": domain_premise, "options": list(options), "gold": gold,
                   "chat_template": False})
        # the origin line changes after the fields: it names the item they already hold
        self.origin.value = (f"<span class='sl-hint'>item from <b>{html.escape(source)}</b></span>"
                             if source else "")
        self.previous_button.disabled, self.next_button.disabled = previous is None, next is None
        self.origin_row.layout.display = None if source or previous or next else "none"

    def step(self, delta: int) -> None:
        """Go to the previous (-1) or next (1) item of the list ``load_item`` came from (nothing at its ends)."""
        step = self._steps.get(delta)
        if step is not None:
            step()

    def _chosen(self, key: str | None) -> None:
        if key is not None and key in self._examples:
            try:
                self.load(self._examples[key])
            except ValueError as err:  # over a cap of the policy: nothing of it was loaded
                self.host.show_messages([Problem(f"{key}: {err}")])

    def state(self) -> dict:
        """The workbench's state: premise, domain premise, options, paraphrases (as typed), gold, model names,
        the causal LM's server URL (never its API key) and whether the chat box is on (a template other than the
        model's own, given in code, is not part of a state: the box is saved off)."""
        host, models = self.host, self.host.models
        return {"format": STATE_FORMAT, "version": 1, "premise": host.premise_box.value,
                "domain_premise": host.domain_box.value or None, "options": [r.option for r in host.rows],
                "paraphrases": [r.paraphrases.value for r in host.rows], "gold": host.gold,
                "lm": models.lm_picker.value, "server": models.wanted("causal")[2] or None,
                "mlm": models.mlm_picker.value, "chat_template": host.chat_box.value and host.chat_choice is True}

    def save_state(self, path: str | Path) -> Path:
        """Write ``state()`` as JSON to ``path`` (a ``.json`` file); ``Workbench.from_state`` reads it back."""
        path = Path(path).expanduser()
        if path.suffix != ".json":
            raise ValueError(f"path: expected a .json file name, got {path.name!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.state(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path
