"""The house rules of docs/layout.md, read from the source: no private name crosses a module, no module over 500
lines, every plug-in point a registry, every module named in docs/layout.md, no import circle between files (lazy
imports included) and no widget made of mixins."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "surfacelab"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package's __init__)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def _imports(name: str, path: Path, package: bool, modules: dict) -> list[tuple[str, str]]:
    """(module imported, name imported from it or "") of every surfacelab import in ``path`` at run time (imports
    under ``if TYPE_CHECKING:`` left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if isinstance(block, ast.If)
                   and getattr(block.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(block)}
    here = name.split(".") if package else name.split(".")[:-1]
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            base = here[:len(here) - node.level + 1] if node.level else []
            target = ".".join(base + (node.module.split(".") if node.module else []))
            if target.split(".")[0] != "surfacelab":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                out.append((sub, "") if sub in modules else (target, alias.name))
        elif isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names if a.name.split(".")[0] == "surfacelab"]
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, list[tuple[str, str]]]:
    modules = _modules()
    return {name: _imports(name, path, package, modules) for name, (path, package) in modules.items()}


def test_no_private_name_is_imported_from_another_module(graph):
    crossing = [f"{m} imports {n} from {t}" for m, imports in graph.items() for t, n in imports if n.startswith("_")]
    assert crossing == []


#: The most lines a module may have: past it, a module holds several jobs (split it along them).
MAX_LINES = 500


def test_every_module_is_at_most_500_lines():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_plug_in_point_is_a_registry_with_its_register_function():
    """What a newcomer adds (a backend, a log reader, a scorer, a task, a letter method or template, a PLL metric, a
    model preset, a workbench view) is one registration: each is a ``Registry`` with a ``register_*`` beside it."""
    from surfacelab import backends, letters, logs, models, scorers, tasks
    from surfacelab.pll import METRICS, register_pll_metric
    from surfacelab.registry import Registry
    from surfacelab.widgets.workbench import views

    points = {"BACKENDS": (backends.BACKENDS, backends.register_backend), "READERS": (logs.READERS,
              logs.register_reader), "SCORERS": (scorers.SCORERS, scorers.register_scorer),
              "SPECS": (tasks.SPECS, tasks.register_task), "METHODS": (letters.METHODS, letters.register_method),
              "TEMPLATES": (letters.TEMPLATES, letters.register_letter_template),
              "METRICS": (METRICS, register_pll_metric), "PRESETS": (models.PRESETS, models.register_preset),
              "VIEWS": (views.VIEWS, views.register_view)}
    for name, (registry, register) in points.items():
        assert isinstance(registry, Registry) and len(registry) > 0 and callable(register), name


def test_layout_md_names_every_module_and_package():
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    names = {p.stem if p.stem != "__init__" else p.parent.name for p in PACKAGE.rglob("*.py")}
    missing = sorted(n for n in names - {"surfacelab"} if n not in text)
    assert missing == []


def _cycles(graph: dict[str, list[tuple[str, str]]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in {t for t, _ in graph[v] if t in graph}:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_files(graph):
    """Lazy imports (inside a function or method) count: a circle made only of them is still a circle."""
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": [("b", "")], "b": [("c", "x")], "c": [("a", "")], "d": [("a", "")]}) == [{"a", "b", "c"}]


def _mixed_widgets(paths: list[Path]) -> dict[str, list[str]]:
    """The classes of ``paths`` whose bases include a widget (ipywidgets / anywidget) and something else: "file:class"
    -> the bases as written."""
    widget_base = ("w.", "ipywidgets.", "anywidget.")
    out = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b) for b in node.bases]
                if any(b.startswith(widget_base) for b in bases) and not all(b.startswith(widget_base) for b in bases):
                    out[f"{path.name}:{node.name}"] = bases
    return out


def test_a_widget_class_inherits_from_ipywidgets_only():
    """What a widget is made of are parts it owns (objects with their own state), never mixins it inherits."""
    assert _mixed_widgets(sorted((PACKAGE / "widgets").rglob("*.py"))) == {}


def test_the_widget_rule_finds_a_mixin(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("import ipywidgets as w\nclass Slots: pass\n"
                 "class Bench(Slots, w.VBox): pass\nclass Ok(w.VBox): pass\n")
    assert _mixed_widgets([f]) == {"m.py:Bench": ["Slots", "w.VBox"]}
