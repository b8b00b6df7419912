"""The lesson text of notebook 02 for a lesson page: its Markdown as HTML, its code cells run (in this process, with
the lesson's model) and their outputs kept, each exercise's answer cell folded.

The notebook stays the one source of the lesson's words and of the code that answers its exercises: its cells are
run top to bottom in one namespace, as a kernel would, with one change: a top-level assignment to ``lm`` (the
notebook's ``lm = sl.load_lm()``) is left out and ``lm`` is the lesson's model, so the page's numbers come from the
model its views use. The notebook is the repository's own (trusted code); what it prints and the tables it returns
are escaped on the way into the page, as every text is.
"""

from __future__ import annotations

import ast
import html
import io
import json
from contextlib import redirect_stdout
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from markdown_it import MarkdownIt

#: Notebook 02, the lesson that goes with the teaching set.
NOTEBOOK = Path(__file__).resolve().parents[3] / "notebooks" / "02_teaching_surface_form_competition.ipynb"
#: The first line that marks a code cell as an exercise's answer ("# Answer 1", "# Answer 4 (an example; …)").
ANSWER = "# Answer"
#: Markdown as CommonMark with raw HTML off: a ``<tag>`` in the text is shown, never read as markup.
MARKDOWN = MarkdownIt("commonmark", {"html": False})


@dataclass
class Cell:
    """One notebook cell as the page shows it: ``kind`` "markdown" (``html`` is the text) or "code" (``code`` its
    source, ``html`` its printed output and value, ``figures`` the plotly JSON it returned); ``answer`` is the
    summary line of an exercise's answer (folded on the page), None for any other cell."""

    kind: str
    html: str
    code: str = ""
    answer: str | None = None
    figures: list[dict] = field(default_factory=list)


def notebook_cells(lm: Any, path: Path = NOTEBOOK) -> list[Cell]:
    """Run the notebook at ``path`` with ``lm`` as its model and return its cells for the page; a cell that fails
    raises ``RuntimeError`` naming it (the page would otherwise teach from a missing answer)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"the lesson text needs notebook 02 at {str(path)!r} (it comes with the repository): "
                                "pass lesson_text=False to leave it out") from None
    namespace: dict[str, Any] = {"__name__": "__lesson__", "lm": lm}
    out = []
    for k, cell in enumerate(doc.get("cells", [])):
        source = "".join(cell.get("source", []))
        if cell.get("cell_type") == "markdown":
            out.append(Cell("markdown", MARKDOWN.render(source)))
        elif cell.get("cell_type") == "code" and source.strip():
            try:
                printed, value = run_cell(source, namespace)
            except Exception as err:
                raise RuntimeError(f"notebook {path.name}, cell {k + 1}: {type(err).__name__}: {err}") from err
            first = source.lstrip().splitlines()[0]
            answer = first.lstrip("# ").strip() if first.startswith(ANSWER) else None
            body, figures = shown(value)
            text = f"<pre class='sl-stdout'>{html.escape(printed)}</pre>" if printed else ""
            out.append(Cell("code", text + body, source, answer, figures))
    return out


def run_cell(source: str, namespace: dict[str, Any]) -> tuple[str, Any]:
    """Run one code cell in ``namespace`` as a kernel would: its printed text and the value of its last line when
    that is an expression (None otherwise). A top-level ``lm = ...`` is skipped: ``lm`` is the lesson's model."""
    tree = ast.parse(source)
    tree.body = [s for s in tree.body if not (isinstance(s, ast.Assign) and len(s.targets) == 1
                                              and isinstance(s.targets[0], ast.Name) and s.targets[0].id == "lm")]
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    buffer = io.StringIO()
    with redirect_stdout(buffer):
        exec(compile(tree, "<lesson>", "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), "<lesson>", "eval"), namespace) if last else None
    return buffer.getvalue(), value


def shown(value: Any) -> tuple[str, list[dict]]:
    """A cell's value as the page shows it: a table (DataFrame or Styler) as HTML, a plotly figure as JSON for the
    page to draw (its HTML is the placeholder ``lesson_page`` fills), anything else as its escaped repr."""
    if value is None:
        return "", []
    if isinstance(value, pd.DataFrame):
        return value.to_html(border=0, classes="sl-table sl-nb-table", escape=True), []
    if type(value).__name__ == "Styler":  # pandas' Styler (its module needs jinja2: not imported here)
        # the number formats of the cell (percentages); the index and headers escaped like the cells
        styled = value.format_index(escape="html", axis=0).format_index(escape="html", axis=1)
        return styled.set_table_attributes("class='sl-table sl-nb-table'").to_html(), []
    if isinstance(value, go.Figure):
        return "", [json.loads(value.to_json())]
    return f"<pre class='sl-stdout'>{html.escape(repr(value))}</pre>", []
