"""The Workbench's examples and saved states (a mixin of ``Workbench``): the examples picker (the teaching set,
the datasets' first items, the saved states of the export folder), ``load_example``, and ``state`` /
``save_state`` / ``load_state`` / ``from_state`` (the JSON file ``state.read_state`` reads)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from textwrap import shorten
from typing import TYPE_CHECKING, Any, Callable

from ...paraphrase import load_teaching_set
from ...tasks import load as load_task
from ..app import NO_SERVER, AppPolicy
from .inputs import Problem
from .state import STATE_FORMAT, read_state

if TYPE_CHECKING:
    from .widget import Workbench

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


class Examples:
    """The examples part of ``Workbench``: the source and item pickers, loading an example, saved states."""

    def _source_changed(self, source: str) -> None:
        self.message.value = ""
        try:
            self._examples = self._load_examples(source)
        except (ValueError, TypeError, OSError) as err:
            self._examples = {}
            self._show_messages([Problem(f"examples: {err}")])
        with self.holding():
            self.example_picker.options = list(self._examples)
            self.example_picker.value = None
        if self._examples:
            self.example_picker.value = next(iter(self._examples))
        elif source == SAVED:
            self._show_messages([Problem(self.policy.public(f"No saved states in {self.export_dir}: use “save state” "
                                                            "first."),
                                         blocking=False)])

    def _load_examples(self, source: str) -> dict[str, dict]:
        if source == CUSTOM:
            return {}
        if source == SAVED:
            out = {}
            for path in sorted(self.export_dir.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
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

    def load_example(self, example: dict) -> None:
        """Fill every field from ``example`` (premise, domain_premise, options, paraphrases, gold; and lm, server,
        mlm when given, as in a saved state). In the app a server other than the app's, or a model that is not one
        of the pickers', is ignored with a note: nothing a file names is contacted or loaded."""
        self.policy.caps.check_options(len(example["options"]))  # before any field changes
        notes = []
        with self.holding():
            if "server" in example and self.policy.app:
                if (example["server"] or "") != self._fixed_server:
                    notes.append(Problem(f"The server this example names, "
                                         f"{shorten(str(example['server'] or ''), 80, placeholder=' …')!r}, is "
                                         f"ignored: this app's is fixed ({self._fixed_server or NO_SERVER}).",
                                         blocking=False, kind="file"))
            elif "server" in example:
                self.server_box.value = example["server"] or ""
            for key, picker in (("lm", self.lm_picker), ("mlm", self.mlm_picker)):
                if example.get(key):
                    if example[key] not in picker.options and self.policy.app:
                        notes.append(Problem(f"The {picker.description} this example names, "
                                             f"{shorten(example[key], 80, placeholder=' …')!r}, is not one of this "
                                             "app's: ignored.", blocking=False, kind="file"))
                        continue
                    if example[key] not in picker.options:
                        picker.options = [*picker.options, example[key]]
                    picker.value = example[key]
            self.premise_box.value = example["premise"]
            self.domain_box.value = example.get("domain_premise") or ""
            for view in self.views.values():  # choices and messages about the previous example
                view.forget()
            self.set_options(example["options"], example.get("paraphrases"), gold=example.get("gold"))
        self._notes = notes
        self.edited(0)

    def load_item(self, premise: str, options: list[str], *, domain_premise: str | None = None,
                  gold: int | None = None, source: str | None = None,
                  previous: Callable[[], None] | None = None, next: Callable[[], None] | None = None) -> None:
        """Load one item of a dataset run exactly as scored (premise, options, domain premise, gold; no
        paraphrases) in one update pass, and show where it came from (``source``, a line under the title) with
        previous / next buttons that call ``previous`` / ``next`` (disabled when None)."""
        self._steps = {-1: previous, 1: next}
        self.load_example({"premise": premise, "domain_premise": domain_premise, "options": list(options),
                           "gold": gold})
        # the origin line changes after the fields: it names the item they already hold
        self.origin.value = (f"<span class='sl-hint'>item from <b>{html.escape(source)}</b></span>"
                             if source else "")
        self.previous_button.disabled, self.next_button.disabled = previous is None, next is None
        self.origin_row.layout.display = None if source or previous or next else "none"

    def step_item(self, delta: int) -> None:
        """Go to the previous (-1) or next (1) item of the list ``load_item`` came from (nothing at its ends)."""
        step = getattr(self, "_steps", {}).get(delta)
        if step is not None:
            step()

    def _example_chosen(self, key: str | None) -> None:
        if key is not None and key in self._examples:
            try:
                self.load_example(self._examples[key])
            except ValueError as err:  # over a cap of the policy: nothing of it was loaded
                self._show_messages([Problem(f"{key}: {err}")])

    def state(self) -> dict:
        """The workbench's state: premise, domain premise, options, paraphrases (as typed), gold, model names
        and the causal LM's server URL (never its API key)."""
        return {"format": STATE_FORMAT, "version": 1, "premise": self.premise_box.value,
                "domain_premise": self.domain_box.value or None, "options": self.options,
                "paraphrases": [r.paraphrases.value for r in self.rows], "gold": self.gold,
                "lm": self.lm_picker.value, "server": self._wanted("causal")[2] or None,
                "mlm": self.mlm_picker.value}

    def save_state(self, path: str | Path) -> Path:
        """Write ``state()`` as JSON to ``path`` (a ``.json`` file); ``Workbench.from_state`` reads it back."""
        path = Path(path).expanduser()
        if path.suffix != ".json":
            raise ValueError(f"path: expected a .json file name, got {path.name!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.state(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return path

    def load_state(self, source: str | Path | dict) -> None:
        """Load a saved state (a path written by ``save_state`` or its dict) into this workbench."""
        self.load_example(read_state(source))

    @classmethod
    def from_state(cls, source: str | Path | dict, **kwargs: Any) -> "Workbench":
        """A new Workbench with the models and inputs of a saved state (``lm=``/``mlm=`` and other keyword
        arguments of ``Workbench`` override). In the app the state's server and models go through ``load_example``:
        those the app does not have are ignored with a note."""
        state = read_state(source)
        kwargs.setdefault("key_for_server", "server" in kwargs)  # a server only the file names gets no key
        kwargs["policy"] = kwargs.get("policy") or AppPolicy.from_env()
        if kwargs["policy"].app:
            bench = cls(**kwargs)
            bench.load_example(state)
            return bench
        for key in ("lm", "mlm", "server"):
            kwargs.setdefault(key, state.get(key))
        bench = cls(**kwargs)
        bench.load_example({k: v for k, v in state.items() if k not in ("lm", "mlm", "server")})
        return bench
