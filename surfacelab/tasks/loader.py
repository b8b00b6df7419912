"""Find, read and render a task split: ``load``, ``list_tasks`` and ``fewshot``.

Where data comes from (``source``):

* ``None`` -- the data root is ``$SURFACELAB_DATA`` if set, else the evaluation data that comes
  with surfacelab (``data/eval`` in the repository; ``DATA_DIR``).  The file is
  ``<root>/<folder>/<split>.jsonl``.  StoryCloze and AG News are not shipped (their licences do
  not allow it): the error for them says where to get them.
* a directory -- a data root laid out like ``data/eval`` (``<dir>/copa/val.jsonl``), or a
  dataset folder itself (``<dir>/val.jsonl``).
* a ``.jsonl`` file -- read directly (``split`` is then only a label, still checked).
* for the hub datasets (ARC-Easy, HellaSwag, RACE; also ARC-Challenge and COPA) a hub dataset
  id such as ``"Rowan/hellaswag"`` (or ``"hub:Rowan/hellaswag"``), read with
  ``datasets.load_dataset`` (imported only then).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from .._checks import check_int, is_int
from ..files import json_lines
from .core import Item
from .registry import SPECS, TaskSpec, check_variant
from .render import render_item
from .task import Task

REPO_ROOT = Path(__file__).resolve().parents[2]
#: the evaluation data shipped with surfacelab: ``<DATA_DIR>/<folder>/<split>.jsonl`` (licences in its README.md)
DATA_DIR = REPO_ROOT / "data" / "eval"
#: The largest data file read (bytes): the biggest shipped split is a few MB and a hub split saved as JSON Lines (the
#: HellaSwag or RACE train sets) some 100 MB; a file past this is refused by name rather than filling the memory.
MAX_DATA_BYTES = 2 * 2 ** 30


def default_data_root() -> Path | None:
    """The data root used when ``source`` is None: ``$SURFACELAB_DATA`` if set, else ``DATA_DIR`` (None if absent)."""
    env = os.environ.get("SURFACELAB_DATA")
    if env:
        return Path(env).expanduser()
    return DATA_DIR if DATA_DIR.is_dir() else None


def _searched_root() -> str:
    env = os.environ.get("SURFACELAB_DATA")
    return f"$SURFACELAB_DATA={env}" if env else str(DATA_DIR)


_WHERE = ("The evaluation data comes with surfacelab in data/eval (see its README.md); "
          "pass source=<data dir or .jsonl file> or set SURFACELAB_DATA.")


def _looks_like_hub_id(source: str) -> bool:
    if source.startswith("hub:"):
        return True
    p = Path(source)
    return (not p.exists() and p.suffix not in (".jsonl", ".json") and not p.is_absolute()
            and not source.startswith((".", "~")) and source.count("/") <= 1)


def _resolve(spec: TaskSpec, split: str, source: str | os.PathLike | None) -> tuple[str, str]:
    """Return ``("file", path)`` or ``("hub", id)``."""
    if source is None:
        root = default_data_root()
        if root is None:
            raise FileNotFoundError(f"source: no data root found (looked for {_searched_root()}). {_WHERE}")
        path = root / spec.folder / f"{split}.jsonl"
        if not path.is_file():
            if spec.obtain:
                raise FileNotFoundError(f"source: no file {path} for task {spec.name!r}. {spec.obtain}.")
            if not spec.shipped:
                hub_id = spec.hub[0] if spec.hub else "a hub id"
                raise FileNotFoundError(
                    f"source: task {spec.name!r} does not come with surfacelab (no {path}); pass source= a hub "
                    f"dataset id such as {hub_id!r} or a local .jsonl in the hub's record shape")
            raise FileNotFoundError(f"source: no file {path} for task {spec.name!r}, split {split!r}. {_WHERE}")
        return "file", str(path)
    src = os.fspath(source)
    if spec.hub is not None and _looks_like_hub_id(src):
        return "hub", src[4:] if src.startswith("hub:") else src
    p = Path(src).expanduser()
    if p.is_dir():
        for cand in (p / spec.folder / f"{split}.jsonl", p / f"{split}.jsonl"):
            if cand.is_file():
                return "file", str(cand)
        raise FileNotFoundError(
            f"source: no file {p / spec.folder / f'{split}.jsonl'} (nor {p / f'{split}.jsonl'}) for task "
            f"{spec.name!r}, split {split!r}. {_WHERE}")
    if p.exists():  # a file; one that is not a regular file (a FIFO, a device) is refused by name when read
        return "file", str(p)
    hint = (f" For {spec.name!r} a hub dataset id such as {spec.hub[0]!r} also works."
            if spec.hub is not None else "")
    raise FileNotFoundError(f"source: {src} does not exist (task {spec.name!r}, split {split!r}). {_WHERE}{hint}")


def read_jsonl(path: str | os.PathLike, limit: int | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Read JSON Lines as ``(1-based line number, record)``, the first ``limit`` records (all if None).

    Lines end at ``\\n`` only (U+2028 and the other separators ``str.splitlines`` knows stay inside the text); only a
    regular file of at most ``MAX_DATA_BYTES`` is read (``files.json_lines``).

    Raises:
        ValueError: naming the file (not a regular file, too large) and the line, for a line that is not UTF-8
            (with the byte), not JSON, nested too deeply, holding a lone surrogate, or not a JSON object.
    """
    out: list[tuple[int, dict[str, Any]]] = []
    if limit is not None and limit <= 0:
        return out
    for lineno, rec in json_lines(path, cap=MAX_DATA_BYTES, where=f"{path}:"):
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: line {lineno}: expected a JSON object, got {type(rec).__name__}")
        out.append((lineno, rec))
        if limit is not None and len(out) >= limit:
            break
    return out


def _read_hub(spec: TaskSpec, hub_id: str, split: str) -> list[tuple[int | None, dict[str, Any]]]:
    try:
        import datasets  # optional dependency, imported only for a hub task
    except ImportError:
        raise ImportError(
            f"source={hub_id!r} is a hub dataset id, which needs the 'datasets' package: pip install datasets "
            "(or pass a local .jsonl in the hub's record shape)") from None
    config = spec.hub[1] if spec.hub else None
    hub_split = spec.hub_splits.get(split, split)
    ds = (datasets.load_dataset(hub_id, config, split=hub_split) if config
          else datasets.load_dataset(hub_id, split=hub_split))
    return [(None, dict(r)) for r in ds]


def subset_indices(n: int, *, limit: int | None = None, sample: int | None = None, seed: int = 0) -> list[int]:
    """Which of ``n`` items to keep: the first ``limit`` (lm-eval's ``--limit``), or a ``sample`` of that many
    drawn with ``seed`` (in original order), or all; at most one of the two. Arguments are checked here.

    >>> subset_indices(10, limit=3), subset_indices(10, sample=3, seed=0), subset_indices(2, limit=5)
    ([0, 1, 2], [0, 6, 9], [0, 1])
    """
    check_int("limit", limit, 1, allow_none=True)
    check_int("sample", sample, 1, allow_none=True)
    if not is_int(seed):
        raise ValueError(f"seed: expected an integer, got {seed!r}")
    if limit is not None and sample is not None:
        raise ValueError(f"limit, sample: give one of them (the first {limit} items or a seeded sample of "
                         f"{sample}), not both")
    if limit is not None:
        return list(range(min(limit, n)))
    if sample is None or sample >= n:
        return list(range(n))
    return sorted(random.Random(seed).sample(range(n), sample))


def _item_id(rec: dict[str, Any], spec: TaskSpec, split: str, index: int) -> str:
    for key in ("id", "InputStoryid", "idx", "example_id"):
        if key in rec and rec[key] not in (None, ""):
            return str(rec[key])
    return f"{spec.name}/{split}/{index}"


def _checked_item(at: str, item_id: str, meta: dict[str, Any], template: Any) -> Item:
    """Render one record; a bad label or an empty choice is a ValueError naming ``at`` (file and line) and the item."""
    for j, choice in enumerate(meta["fields"].get("choices") or []):
        if not isinstance(choice, str) or not choice.strip():
            raise ValueError(f"{at}: item {item_id!r}: choice {j + 1} is empty ({choice!r}); an empty option would be "
                             "scored as whitespace. Fix or drop the record")
    try:
        item = render_item(item_id, meta, template)
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise ValueError(f"{at}: {exc}") from None
    for j, option in enumerate(item.options):
        if not option.strip():
            raise ValueError(f"{at}: item {item_id!r}: option {j} renders as {option!r}, only whitespace")
    return item


def load(
    name: str,
    split: str | None = None,
    *,
    source: str | os.PathLike | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    variant: str = "paper",
    n_shot: int = 0,
    shot_seed: int = 0,
    shot_split: str | None = None,
) -> Task:
    """Load a task split rendered with the paper's template.

    Args:
        name: task name, see :func:`list_tasks`.
        split: split name (default: the paper's split for the task).
        source: data root dir, dataset folder, ``.jsonl`` file or hub id (see module docstring).
        limit: keep the first this many items (as lm-evaluation-harness's ``--limit``).
        sample: keep a random sample of this many items, drawn with ``seed``, in original order
            (not with ``limit``).
        seed: seed of the ``sample`` draw.
        variant: the template family: ``"paper"`` (the paper's public code, default), ``"paper_table"``
            (its Table 7) or ``"lm-eval"`` (lm-evaluation-harness 0.4.13's prompt, for the tasks the
            harness has; see :mod:`surfacelab.tasks.harness`).
        n_shot: prepend this many labelled examples (see :func:`fewshot`).
        shot_seed: seed of the few-shot draw.
        shot_split: split the shots come from (default: the task's labelled few-shot split).

    Returns:
        a :class:`Task`.
    """
    spec = SPECS[name]
    if split is None:
        split = spec.default_split
    if split not in spec.all_splits:
        raise ValueError(f"split: {split!r} is not a split of task {name!r}; valid splits: {list(spec.all_splits)}")
    check_variant(spec, variant)
    subset_indices(0, limit=limit, sample=sample, seed=seed)  # check the arguments before reading
    check_int("n_shot", n_shot, 0)

    kind, where = _resolve(spec, split, source)
    rows = _read_hub(spec, where, split) if kind == "hub" else read_jsonl(where)
    template = spec.templates[variant]

    parsed: list[tuple[int | None, dict[str, Any], dict[str, Any]]] = []
    for lineno, rec in rows:
        for sub in (spec.explode(rec) if spec.explode else [rec]):
            try:
                fields = spec.parse(sub)
            except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
                at = f"{where}: line {lineno}" if lineno is not None else f"{where}: record {len(parsed) + 1}"
                msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
                raise ValueError(f"{at}: not a valid {spec.dataset} record for task {name!r} "
                                 f"(missing or bad field: {msg})") from None
            parsed.append((lineno, sub, fields))
    if not parsed:
        raise ValueError(f"source: {'hub:' if kind == 'hub' else ''}{where} has no records (an empty file?), so task "
                         f"{name!r}, split {split!r}, would have no items")

    items: list[Item] = []
    for index in subset_indices(len(parsed), limit=limit, sample=sample, seed=seed):
        lineno, rec, fields = parsed[index]
        meta: dict[str, Any] = {"raw": rec, "fields": fields, "index": index, "line": lineno}
        for key in ("subject", "coarse_label", "activity_label"):  # scalar facts worth a frame column
            if isinstance(fields.get(key), str):
                meta[key] = fields[key]
        if name.startswith("copa"):
            meta["question"] = fields["question"]  # 'cause' / 'effect'
        at = f"{where}: line {lineno}" if lineno is not None else f"{where}: record {index + 1}"
        items.append(_checked_item(at, _item_id(rec, spec, split, index), meta, template))

    task = Task(name=name, split=split, items=items, template=template,
                source=f"hub:{where}" if kind == "hub" else where, variant=variant,
                source_arg=None if source is None else os.fspath(source))
    if n_shot:
        task = fewshot(task, n_shot, seed=shot_seed, source_split=shot_split)
    return task


def _key(rec: dict[str, Any]) -> str:
    return json.dumps(rec, sort_keys=True, default=str)


def fewshot(task: Task, n: int, *, seed: int = 0, source_split: str | None = None,
            source: str | os.PathLike | None = None) -> Task:
    """Prepend ``n`` labelled examples to every premise (the paper's few-shot prefix).

    One seeded shuffle of the labelled pool gives a single shared set of ``n`` examples, as in
    the paper's code (one set per seed; run several seeds for mean +- std).  An item never sees
    itself: if an example has the same raw record as the item, the next one in the shuffle
    replaces it for that item.  Each example is rendered with the task's template and the gold
    option filled in (for SST-2: ``' <sentence>: positive\\n'``), and the examples are joined
    with no separator in front of the premise.  The domain premise is unchanged.

    Args:
        task: a loaded task (its template and variant are reused).
        n: number of examples (>= 1).
        seed: seed of the shuffle.
        source_split: split the examples come from (default: the task's few-shot split, e.g.
            SST-2 dev, or the evaluated split itself).
        source: where that split is read (default: the same ``source`` the task was loaded from).
    """
    check_int("n", n, 1)
    spec = SPECS[task.name]
    if task.template.per_option_premise is not None:
        raise ValueError(f"task: few-shot prefixes are not defined for {task.name!r} (per-option contexts)")
    if source_split is None:
        source_split = spec.shot_split if spec.shot_split and spec.shot_split != task.split else task.split
    if source is None:
        source = task.source_arg
        if source is not None and Path(os.fspath(source)).is_file() and source_split != task.split:
            raise ValueError(f"source: task was loaded from the file {source}; pass source= for split {source_split!r}")
    pool = load(task.name, source_split, source=source, variant=task.variant)
    if n > len(pool) - 1:
        raise ValueError(f"n={n} is too large for a pool of {len(pool)} examples from split {source_split!r}")
    order = random.Random(seed).sample(range(len(pool)), len(pool))
    pool_keys = [_key(pool.items[i].meta["raw"]) for i in order]

    items = []
    for it in task.items:
        own = _key(it.meta["raw"])
        chosen = [i for i, k in zip(order, pool_keys) if k != own][:n]
        meta = dict(it.meta)
        meta["shot_fields"] = [pool.items[i].meta["fields"] for i in chosen]
        meta["shot_ids"] = [pool.items[i].id for i in chosen]
        meta["n_shot"] = n
        meta["shot_seed"] = seed
        meta["shot_split"] = source_split
        base_meta = {k: v for k, v in meta.items() if k != "fewshot_prefix"}
        items.append(render_item(it.id, base_meta, task.template))
    return replace(task, items=items, n_shot=n)


_DP_DISPLAY = {
    "copa": "' so' (effect) | ' because' (cause)",
    "copa-flipped": "' because' (effect) | ' so' (cause)",
    "hellaswag": "(last word of the context, with its leading space)",
}


def list_tasks() -> pd.DataFrame:
    """One row per task: dataset, splits, default split, options per item, domain premise, whether shipped,
    and whether it has an lm-eval template (``variant="lm-eval"``)."""
    rows = []
    for s in SPECS.values():
        t = s.templates["paper"]
        dp = _DP_DISPLAY.get(s.name, t.domain_premise if isinstance(t.domain_premise, str) else "(per item)")
        rows.append({
            "task": s.name,
            "dataset": s.dataset,
            "default_split": s.default_split,
            "splits": ", ".join(s.splits),
            "n_options": s.n_options if s.n_options is not None else "varies",
            "domain_premise": dp,
            "domain_premise_note": s.description,
            "shipped": s.shipped,
            "hub_example": s.hub[0] if s.hub else "",
            "lm_eval": "lm-eval" in s.templates,
        })
    return pd.DataFrame(rows)
