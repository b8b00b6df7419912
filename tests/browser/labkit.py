"""JupyterLab + headless Debian chromium, for the browser tests and ``benchmarks/bench_workbench_browser.py``.

``make_lab`` starts ``make lab`` exactly as a user would (with a port, token, notebook folder and
Jupyter config it sets), reads the one URL it prints and waits for the server. ``open_workbench``
opens that URL, runs the notebook and waits for every view. ``timed_edit`` types into the premise
and measures, in the page, the time from the last keystroke until the workbench's DOM has been quiet
for ``quiet_ms`` with no view stale (a ``MutationObserver`` on ``.sl-workbench``). ``make_app`` starts ``make app``
(Voilà: the workbench without code, one kernel per visitor) the same way, and ``open_app`` opens a visitor's page
(``benchmarks/bench_class.py``: a class of them at once).

Needs /usr/bin/chromium (``apt-get install -y chromium``) and the ``playwright`` pip package (no
browser download: the Debian chromium is launched through ``executable_path``).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server", "--no-first-run",
         "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-quic"]
#: 127.0.0.1 directly, whatever proxy the environment names
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))
VIEWS = ["scores", "tokens", "paraphrase", "letters", "pll", "why"]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Lab:
    """A running ``make lab``: the URL it printed, its base URL and token, its notebook folder and log."""

    url: str
    base: str
    token: str
    lab_dir: Path
    log: Path
    printed: str


def _settings(tmp: Path) -> dict[str, str]:
    # the user settings start empty: the news prompt stays away through make lab's own overrides.json
    config = tmp / "config"
    config.mkdir(parents=True, exist_ok=True)
    # window.jupyterapp: lets the tests run cells and switch themes through JupyterLab's commands
    (config / "jupyter_server_config.json").write_text('{"LabApp": {"expose_app_in_browser": true}}')
    return dict(os.environ, JUPYTER_CONFIG_DIR=str(tmp / "config"), JUPYTER_RUNTIME_DIR=str(tmp / "runtime"),
                JUPYTERLAB_WORKSPACES_DIR=str(tmp / "workspaces"), JUPYTERLAB_SETTINGS_DIR=str(tmp / "settings"))


@contextmanager
def run_make(target: str, tmp: Path, variables: dict[str, Any], ready: str, *, env: dict[str, str] | None = None,
             timeout: float = 90.0) -> Iterator[tuple[str, Path]]:
    """Run ``make <target>`` as a user would (set-up treated as done: ``-o <venv>/.installed``) with ``variables``
    on its command line and ``env`` (default: this process's) as its environment; wait for the first URL it
    prints on ``ready``'s host and port (a model server's address may be printed before it), then until ``ready`` (a
    URL on 127.0.0.1) answers. Yields (that URL, the log of its output); the whole
    process group is ended afterwards."""
    tmp.mkdir(parents=True, exist_ok=True)
    venv = Path(sys.prefix)
    log_path = tmp / f"make-{target}.log"
    log = open(log_path, "w")
    cmd = ["make", "--no-print-directory", "-C", str(REPO), "-o", f"{venv}/.installed", target, f"VENV={venv}",
           *(f"{k}={v}" for k, v in variables.items())]
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    origin = re.match(r"https?://[^/?]+", ready).group(0)
    try:
        end = time.monotonic() + timeout
        url = None
        while time.monotonic() < end:
            text = log_path.read_text()
            found = [u for u in re.findall(r"https?://\S+", text) if u.startswith(origin + "/")]
            if found and url is None:
                url = found[0]
            if url is not None:
                try:
                    DIRECT.open(ready, timeout=1)
                    break
                except OSError:
                    pass
            if proc.poll() is not None:
                raise RuntimeError(f"make {target} exited ({proc.returncode}): {text[-2000:]}")
            time.sleep(0.2)
        else:
            raise RuntimeError(f"make {target} did not serve within {timeout} s: {log_path.read_text()[-2000:]}")
        yield url, log_path
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(15)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()


@contextmanager
def make_lab(tmp: Path, *, timeout: float = 90.0) -> Iterator[Lab]:
    """Run ``make lab`` (set-up treated as done: ``-o <venv>/.installed``) in a temp Jupyter config."""
    port, token = free_port(), secrets.token_hex(16)
    variables = {"PORT": port, "TOKEN": token, "LAB_DIR": tmp / "lab", "OPEN": 0}
    with run_make("lab", tmp, variables, f"http://127.0.0.1:{port}/api/status?token={token}", env=_settings(tmp),
                  timeout=timeout) as (url, log):
        yield Lab(url, f"http://127.0.0.1:{port}", token, tmp / "lab", log, log.read_text())


@contextmanager
def lab_page(tmp: Path, width: int = 1440, height: int = 900) -> Iterator[tuple[Lab, Any, list[str]]]:
    """For a browser test's module: ``make_lab`` in ``tmp`` and a chromium page (``launch``): yields (the lab, the
    page, the errors seen in the page); skips the test where /usr/bin/chromium or playwright is missing."""
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: apt-get install -y chromium")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    with make_lab(tmp) as lab, sync_playwright() as p:
        browser, page, errors = launch(p, width, height)
        try:
            yield lab, page, errors
        finally:
            browser.close()


def git_status() -> str:
    """The checkout's ``git status`` (untracked files too): a browser test compares it before and after, since a
    notebook run from the lab's folder must write nothing here."""
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def launch(p: Any, width: int = 1440, height: int = 900, *, dark: bool = False) -> tuple[Any, Any, list[str]]:
    """A chromium page of the given viewport; returns (browser, page, errors seen in the page)."""
    browser = p.chromium.launch(executable_path=CHROMIUM, chromium_sandbox=False, args=FLAGS)
    page = browser.new_page(viewport={"width": width, "height": height})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("console", lambda msg: errors.append(f"console: {msg.text}") if msg.type == "error" else None)
    return browser, page, errors


def page_state(page: Any, log: Path | None = None) -> str:
    """What the page shows now, for a failure message: the status line, each view's classes, the cells' stderr and
    the tail of the server's log."""
    parts = []
    try:
        parts.append("status: " + repr(page.evaluate("document.querySelector('.sl-status')?.innerText ?? null")))
        parts.append("kernel: " + repr(page.evaluate(
            "window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status ?? null")))
        parts.append("views: " + repr(page.evaluate(
            "[...document.querySelectorAll('.sl-view')].map(e => e.className)")))
        stderr = page.locator("[data-mime-type='application/vnd.jupyter.stderr']").all_inner_texts()
        parts.append("stderr: " + " | ".join(stderr)[-3000:])
    except Exception as exc:  # the page itself may be gone (a crashed tab)
        parts.append(f"page unreadable: {exc!r}")
    if log is not None and log.exists():
        parts.append("server log tail: " + log.read_text()[-2000:])
    return "\n".join(parts)


def wait_for(page: Any, wait: str, timeout_ms: float) -> None:
    """Wait until ``wait`` holds: a CSS selector is on the page or, starting with ``js:``, a JavaScript expression
    is true."""
    if wait.startswith("js:"):
        page.wait_for_function(wait[3:], timeout=timeout_ms)
    else:
        page.wait_for_selector(wait, timeout=timeout_ms)


def open_notebook(page: Any, url: str, ready: list[tuple[str, str]], *, dark: bool = False,
                  file_browser: bool = False, timeout_s: float = 300.0, log: Path | None = None,
                  what: str = "the notebook") -> None:
    """Open ``url`` (a notebook in the lab), run all its cells and wait for each of ``ready``: (what it is, a CSS
    selector or, starting with ``js:``, a JavaScript expression that becomes true).

    One deadline, ``timeout_s``, for all of it; past it, an ``AssertionError`` says what the page showed
    (``page_state``, with the tail of ``log``)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    end = time.monotonic() + timeout_s

    def left_ms() -> float:
        return max(1_000.0, (end - time.monotonic()) * 1000.0)

    step = "opening the URL"
    try:
        page.goto(url, timeout=left_ms())
        step = "JupyterLab showing the notebook"
        page.wait_for_function("window.jupyterapp && document.querySelector('.jp-Notebook')", timeout=left_ms())
        step = "the kernel becoming idle"
        page.wait_for_function("(() => { const k = window.jupyterapp.shell.currentWidget?.sessionContext?.session"
                               "?.kernel; return k && k.status === 'idle'; })()", timeout=left_ms())
        if dark:
            page.evaluate("window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
            page.wait_for_function("document.body.dataset.jpThemeLight === 'false'", timeout=left_ms())
        left_open = page.evaluate("!window.jupyterapp.shell.leftCollapsed")
        if left_open != file_browser:
            page.evaluate("window.jupyterapp.commands.execute('application:toggle-left-area')")
        page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")
        for step, wait in ready:
            wait_for(page, wait, left_ms())
    except PlaywrightTimeout:
        raise AssertionError(f"{what} did not open within {timeout_s:.0f} s, waiting for {step}:\n"
                             f"{page_state(page, log)}") from None


#: The workbench drawn: every view ready, then the status line saying how long the update took.
WORKBENCH_READY = [*((f"the {view} view becoming ready", f".sl-view-{view}.sl-view-ready") for view in VIEWS),
                   ("the status line saying 'updated'",
                    "js:document.querySelector('.sl-status')?.innerText.startsWith('updated')")]


def open_workbench(page: Any, url: str, *, dark: bool = False, file_browser: bool = False,
                   timeout_s: float = 300.0, log: Path | None = None) -> None:
    """Open ``url`` (a notebook with a Workbench), run all cells and wait until every view is ready (see
    ``open_notebook``)."""
    open_notebook(page, url, WORKBENCH_READY, dark=dark, file_browser=file_browser, timeout_s=timeout_s, log=log,
                  what="the workbench")


def write_notebook(path: Path, cells: list[str]) -> Path:
    """Write a notebook of code cells (no outputs) to ``path``, e.g. into ``Lab.lab_dir``."""
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    notebook = {"cells": [dict(cell, source=source) for source in cells], "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}}
    path.write_text(json.dumps(notebook, indent=1), encoding="utf-8")
    return path


def notebook_url(lab: Lab, name: str) -> str:
    """The URL that opens notebook ``name`` of the lab's folder."""
    return f"{lab.base}/lab/tree/{name}?token={lab.token}"


def kernel(page: Any, code: str) -> str:
    """Run ``code`` in the kernel of the notebook ``page`` shows (as a cell would, without adding one); returns what
    it printed. An exception in it is an ``AssertionError`` with its traceback's last line."""
    out = page.evaluate("""async (code) => {
      const future = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.requestExecute({code});
      let text = '', error = null;
      future.onIOPub = (msg) => {
        if (msg.header.msg_type === 'stream') text += msg.content.text;
        if (msg.header.msg_type === 'error') error = msg.content.ename + ': ' + msg.content.evalue;
      };
      await future.done;
      return {text, error};
    }""", code)
    if out["error"]:
        raise AssertionError(f"in the kernel: {out['error']}\n{code}")
    return out["text"]


def kernel_json(page: Any, expression: str) -> Any:
    """The value of a Python ``expression`` (JSON-able) in the kernel of the notebook ``page`` shows."""
    return json.loads(kernel(page, f"import json as _json\nprint(_json.dumps({expression}))"))


WATCH_JS = """() => {
  const VIEW_NAMES = %s;
  const root = document.querySelector('.sl-workbench');
  if (window.__slWatch) window.__slWatch.obs.disconnect();
  const w = {last: performance.now(), key: 0, count: 0, busy: false, stale: false, obs: null, views: {}, first: {},
             later: {}};
  const names = VIEW_NAMES;
  w.obs = new MutationObserver((records) => {
    const now = performance.now();
    w.last = now; w.count++;
    for (const r of records) {
      if (r.type === 'attributes' && r.target.classList && r.target.classList.contains('sl-busy')) w.busy = true;
      // a view in sight marked stale by the edit (views out of sight may have been stale, deferred, before it)
      if (w.key > 0 && r.type === 'attributes' && r.target.classList && r.target.classList.contains('sl-view')
          && r.target.classList.contains('sl-stale') && !r.target.classList.contains('sl-deferred')) w.stale = true;
      const el = r.target.nodeType === 1 ? r.target : r.target.parentElement;
      const view = el && el.closest ? el.closest('.sl-view') : null;
      const name = view && names.find((n) => view.classList.contains('sl-view-' + n));
      if (name) w.views[name] = now;  // the last change inside each view
      // a view the kernel found out of sight after the keystroke: computed later, in the background
      if (name && w.key > 0 && view.classList.contains('sl-deferred')) w.later[name] = true;
      // the first change of each view's content after the keystroke (a slow view's first part)
      if (name && w.key > 0 && !(name in w.first) && el.closest('.sl-view-content')) w.first[name] = now;
    }
  });
  w.obs.observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
  const box = document.querySelector('.sl-premise textarea');
  box.addEventListener('keydown', () => { w.key = performance.now(); w.first = {}; w.later = {}; }, true);
  window.__slWatch = w;
}""" % repr(VIEWS)

QUIET_JS = """([quiet, changed]) => {
  const w = window.__slWatch, now = performance.now();
  // views out of sight are left stale ("deferred") until they come into sight
  const stale = document.querySelectorAll('.sl-workbench .sl-stale:not(.sl-deferred)').length;
  const status = document.querySelector('.sl-status')?.innerText || '';
  return (!changed || (w.key > 0 && w.last > w.key)) && !stale && status.startsWith('updated') && now - w.last >= quiet;
}"""


#: The views the kernel computed on the keystroke's path (in sight for their sight probes; the others are marked
#: ``sl-deferred`` and computed later), from ``WATCH_JS``'s record.
SIGHT_JS = "%s.filter((n) => !window.__slWatch.later[n])" % repr(VIEWS)


def wait_quiet(page: Any, quiet_ms: int = 700, timeout_ms: int = 120_000, *, changed: bool = True) -> None:
    """Wait until no view in sight is stale and the workbench's DOM has not changed for ``quiet_ms`` (``changed``:
    and it did change after the last keystroke)."""
    page.wait_for_function(QUIET_JS, arg=[quiet_ms, changed], timeout=timeout_ms, polling=50)


def timed_edit(page: Any, base: str, word: str, *, delay_ms: int = 60, quiet_ms: int = 700,
               stale_seen: list | None = None, per_view: dict | None = None,
               first_content: dict | None = None, in_sight: list | None = None) -> float:
    """Set the premise to ``base`` (and let it settle), then type ``word`` at its end with ``delay_ms`` between
    keys; returns the seconds from the last keystroke until the DOM was last changed (quiet after it).

    ``stale_seen``: if given, gets two booleans appended: some view in sight was marked ``sl-stale`` after a
    keystroke (not only views out of sight, deferred before it), and some view carried ``sl-busy`` while the
    update ran. ``per_view``: if given, gets per view the
    seconds from the last keystroke to the last change inside it (None: it did not change), and under
    ``"deferred"`` the views left for later because they were out of sight. ``first_content``: if given, gets
    per view the seconds from the last keystroke to the first change of its content (what a slow view shows
    first), None where its content did not change. ``in_sight``: if given, gets the names of the views in sight
    (computed on the keystroke's path; the others are computed after them, in the background).
    """
    box = page.locator(".sl-premise textarea")
    box.fill(base)
    page.evaluate(WATCH_JS)
    time.sleep(0.5)  # past the debounce: an update for the new base has started, or none was needed
    wait_quiet(page, quiet_ms, changed=False)
    page.evaluate(WATCH_JS)
    box.click()
    page.keyboard.press("End")
    page.keyboard.type(word, delay=delay_ms)
    wait_quiet(page, quiet_ms)
    if in_sight is not None:
        in_sight.extend(page.evaluate(SIGHT_JS))
    w = page.evaluate("(() => { const w = window.__slWatch; return {key: w.key, last: w.last, busy: w.busy, "
                      "stale: w.stale, views: w.views, first: w.first}; })()")
    if per_view is not None:
        for name in VIEWS:
            t = w["views"].get(name)
            per_view[name] = (t - w["key"]) / 1000.0 if t is not None and t > w["key"] else None
        per_view["deferred"] = page.evaluate("[...document.querySelectorAll('.sl-view.sl-deferred')].map(e => "
                                             "[...e.classList].find(c => c.startsWith('sl-view-')).slice(8))")
    if first_content is not None:
        for name in VIEWS:
            t = w["first"].get(name)
            first_content[name] = (t - w["key"]) / 1000.0 if t is not None and t > w["key"] else None
    if stale_seen is not None:
        stale_seen.extend([w["stale"], w["busy"]])
    return (w["last"] - w["key"]) / 1000.0


def timed_scroll(page: Any, view: str, *, quiet_ms: int = 700) -> dict[str, float]:
    """Scroll ``view`` to the top of the screen; returns, per view in sight after the scroll that changed after it,
    the seconds from the scroll until its last change (the DOM quiet after it). An empty dict: nothing in sight was
    left to draw. (Views below the screen that the background finishes meanwhile are not what a person waits for.)"""
    page.evaluate(WATCH_JS)
    page.evaluate("(v) => { window.__slWatch.key = performance.now(); "
                  "document.querySelector('.sl-view-' + v).scrollIntoView({block: 'start'}); }", view)
    time.sleep(0.3)  # the view's sight probe reaches the kernel, which starts what it deferred
    wait_quiet(page, quiet_ms, changed=False)
    w = page.evaluate("(() => { const w = window.__slWatch; return {key: w.key, views: w.views}; })()")
    seen = page.evaluate("(names) => names.filter((n) => { const r = document.querySelector('.sl-view-' + n)"
                         ".getBoundingClientRect(); return r.bottom > 0 && r.top < window.innerHeight; })", VIEWS)
    return {name: (t - w["key"]) / 1000.0 for name, t in w["views"].items() if t > w["key"] and name in seen}


def timed_open(page: Any, opener: Any, *, quiet_ms: int = 700, timeout_ms: int = 120_000) -> dict[str, Any]:
    """Click ``opener`` (a row of the explorer's item table, or a button that opens an item other than the one
    open) while the workbench is on the page, and measure in the page from the click: ``reveal_s`` until the
    workbench was scrolled into view (``reveal.js``), ``sight_s`` until the last change inside the views in sight
    (named in ``in_sight``; computed on the click's path), ``quiet_s`` until the workbench's DOM was last changed
    (quiet for ``quiet_ms`` after it, no view in sight stale), and ``per_view`` (seconds to each view's last
    change; None: it did not change)."""
    page.evaluate(WATCH_JS)
    page.evaluate("""() => window.addEventListener('click', (event) => {
      const w = window.__slWatch;
      if (!event.slReplayed) { w.key = performance.now(); w.first = {}; w.later = {}; }
    }, {capture: true, once: true})""")
    origin = page.inner_text(".sl-workbench .sl-origin")
    opener.click()
    # the item is loaded when the origin line names it (a change of the DOM from before the click may not be it)
    page.wait_for_function("(before) => document.querySelector('.sl-workbench .sl-origin').innerText !== before",
                           arg=origin, timeout=timeout_ms)
    wait_quiet(page, quiet_ms, timeout_ms)
    sight = page.evaluate(SIGHT_JS)
    w = page.evaluate("(() => { const w = window.__slWatch; return {key: w.key, last: w.last, views: w.views, "
                      "revealed: Number(document.querySelector('.sl-workbench').dataset.slRevealedAt || 0)}; })()")
    per_view = {name: (t - w["key"]) / 1000.0 if (t := w["views"].get(name)) and t > w["key"] else None
                for name in VIEWS}
    changed = [per_view[n] for n in sight if per_view[n] is not None]
    return {"reveal_s": (w["revealed"] - w["key"]) / 1000.0 if w["revealed"] > w["key"] else None,
            "sight_s": max(changed) if changed else None, "quiet_s": (w["last"] - w["key"]) / 1000.0,
            "in_sight": sight, "per_view": per_view}


def wrapped_labels(page: Any) -> list[str]:
    """Table labels that break over two lines: every header cell of the views' tables, and a gold row's short option
    ("★ ␣tub": the mark never ends a line without its option). A long option may wrap; a label may not."""
    return page.evaluate("""() => {
      const cells = [...document.querySelectorAll('.sl-workbench .sl-table th')];
      for (const td of document.querySelectorAll('.sl-workbench .sl-table tr.sl-gold-row td:first-child'))
        if (td.textContent.length <= 12) cells.push(td);
      return cells.filter((e) => {
        const r = document.createRange();
        r.selectNodeContents(e);
        const lines = new Set([...r.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top)));
        return lines.size > 1;
      }).map((e) => e.textContent);
    }""")


def watch_redraw(page: Any, view: str) -> None:
    """Start recording whether ``view`` is marked stale (call it before the edit: the mark may reach the page
    before or after the edit's other changes); ``wait_redrawn`` then waits for it to be ready again."""
    page.evaluate("""(name) => {
      const view = document.querySelector('.sl-view-' + name);
      window.__slMarked = window.__slMarked || {};
      window.__slMarked[name] = false;
      const obs = new MutationObserver(() => {
        if (view.classList.contains('sl-stale')) { window.__slMarked[name] = true; obs.disconnect(); }
      });
      obs.observe(view, {attributes: true, attributeFilter: ['class']});
    }""", view)


def wait_redrawn(page: Any, view: str, timeout_ms: int = 60_000) -> None:
    """Wait until ``view``, marked stale since ``watch_redraw``, is ready again (in sight or drawn in the
    background)."""
    page.wait_for_function("(name) => window.__slMarked[name] && document.querySelector('.sl-view-' + name)"
                           ".classList.contains('sl-view-ready')", arg=view, timeout=timeout_ms)


def no_horizontal_scroll(page: Any) -> dict:
    """Scroll widths against client widths of the notebook's scroller and of the workbench's boxes."""
    return page.evaluate("""() => {
      const out = {};
      const scroller = document.querySelector('.jp-WindowedPanel-outer') || document.querySelector('.jp-Notebook');
      out.notebook = [scroller.scrollWidth, scroller.clientWidth];
      out.page = [document.documentElement.scrollWidth, document.documentElement.clientWidth];
      const bad = [];
      for (const el of document.querySelectorAll('.sl-workbench, .sl-workbench *')) {
        const cs = getComputedStyle(el);
        if (el.scrollWidth > el.clientWidth + 1 && ['auto', 'scroll'].includes(cs.overflowX)) {
          bad.push((el.className && el.className.baseVal === undefined ? el.className : el.tagName) +
                   ` ${el.scrollWidth}>${el.clientWidth}`);
        }
      }
      out.scrollbars = bad;
      const wb = document.querySelector('.sl-workbench').getBoundingClientRect();
      out.overflow = [];
      for (const el of document.querySelectorAll('.sl-view, .sl-controls, .sl-option-row')) {
        const r = el.getBoundingClientRect();
        if (r.right > wb.right + 1) out.overflow.push(`${el.className} right ${r.right} > ${wb.right}`);
      }
      out.columns = getComputedStyle(document.querySelector('.sl-views')).gridTemplateColumns.split(' ').length;
      return out;
    }""")


def overlapping_text(page: Any, view: str) -> list[str]:
    """Pairs of texts in ``view``'s plotly figures (the title with its note, panel titles, legend, axis titles)
    whose boxes on the screen overlap."""
    return page.evaluate("""(view) => {
      const out = [];
      for (const svg of document.querySelectorAll(`.sl-view-${view} .main-svg`)) {
        const texts = [...svg.querySelectorAll('.gtitle, .annotation-text, .legendtext, .xtitle, .ytitle')]
          .map(t => [t.textContent, t.getBoundingClientRect()]).filter(([, r]) => r.width > 0);
        texts.forEach(([a, r], i) => texts.slice(i + 1).forEach(([b, q]) => {
          if (r.left < q.right && q.left < r.right && r.top < q.bottom && q.top < r.bottom) out.push(`${a} / ${b}`);
        }));
      }
      return out;
    }""", view)


# --- `make app`: the workbench served by Voilà, one kernel per visitor -----------------------------------------------

@dataclass
class App:
    """A running ``make app``: the URL it printed (the workbench's page), its base URL and token, its log, what it
    printed and its app folder (``APP_DIR``)."""

    url: str
    base: str
    token: str
    log: Path
    printed: str
    app_dir: Path

    def page_url(self, notebook: str) -> str:
        """The URL of ``notebook``'s page (e.g. ``06_explore_a_dataset``), with the token."""
        return f"{self.base}/voila/render/{notebook}.ipynb?token={self.token}"


@contextmanager
def make_app(tmp: Path, *, env: dict[str, str] | None = None, timeout: float = 120.0,
             **variables: Any) -> Iterator[App]:
    """Run ``make app`` as a user would, on a free port with a token of its own, the notebooks copied into
    ``tmp/app``; ``variables``: more make variables (``SERVER=...``, ``APP_CULL_S=...``); ``env``: more
    environment for it (``SURFACELAB_API_KEY``: never on a command line). The server answers (its notebook list)
    when this yields; no visitor's kernel has started yet."""
    port, token = free_port(), secrets.token_hex(16)
    variables = {"PORT": port, "TOKEN": token, "APP_DIR": tmp / "app", **variables}
    with run_make("app", tmp, variables, f"http://127.0.0.1:{port}/?token={token}",
                  env={**_settings(tmp), **(env or {})}, timeout=timeout) as (url, log):
        yield App(url, f"http://127.0.0.1:{port}", token, log, log.read_text(), Path(variables["APP_DIR"]))


def record_requests(page: Any) -> list[str]:
    """Start recording the URL of every request the page's browser context makes (documents, scripts, styles, fonts,
    fetches, websockets); returns the list it appends to."""
    seen: list[str] = []
    page.context.on("request", lambda request: seen.append(request.url))
    page.on("websocket", lambda ws: seen.append(ws.url))
    return seen


def foreign(requests: list[str], base: str) -> list[str]:
    """The requests of ``record_requests`` that go anywhere but ``base`` (the app's own origin); data: and blob: URLs
    stay in the page."""
    origin, socket_origin = base.rstrip("/") + "/", base.replace("http", "ws", 1).rstrip("/") + "/"
    return [u for u in requests if not u.startswith((origin, socket_origin, "data:", "blob:"))]


def open_app(page: Any, url: str, *, timeout_s: float = 300.0, log: Path | None = None) -> float:
    """Open ``url``, a page of ``make app`` (Voilà starts a kernel for this visitor, runs the notebook in it and
    sends the page as the cells finish), and wait until the workbench is drawn (``WORKBENCH_READY``); returns the
    seconds it took. Past ``timeout_s``, an ``AssertionError`` says what the page showed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    start = time.monotonic()
    end = start + timeout_s
    step = "the page (Voilà runs the notebook first)"
    try:
        page.goto(url, timeout=timeout_s * 1000.0)
        for step, wait in WORKBENCH_READY:
            wait_for(page, wait, max(1_000.0, (end - time.monotonic()) * 1000.0))
    except PlaywrightTimeout:
        raise AssertionError(f"the app did not show the workbench within {timeout_s:.0f} s, waiting for {step}:\n"
                             f"{page_state(page, log)}\npage text: {page.inner_text('body')[:1000]!r}") from None
    return time.monotonic() - start


def app_kernel(page: Any) -> str:
    """The id of the kernel Voilà started for the visitor of ``page`` (its page configuration names it)."""
    return page.evaluate("JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId")


def kernel_rss(kernel_id: str) -> int | None:
    """The resident memory in bytes of the kernel process ``kernel_id`` (found by its connection file,
    ``kernel-<id>.json``, on its command line); None when no such process runs."""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        if any(f"kernel-{kernel_id}.json" in part for part in proc.info["cmdline"] or ()):
            try:
                return proc.memory_info().rss
            except psutil.NoSuchProcess:
                return None
    return None


def score_table(page: Any) -> dict[str, list[str]]:
    """The scorer table as the page shows it: column header -> the cells' text, one per option."""
    header, *rows = page.evaluate("[...document.querySelectorAll('.sl-view-scores .sl-score-table tr')]"
                                  ".map((tr) => [...tr.cells].map((c) => c.innerText.trim()))")
    return {name: [row[i] for row in rows] for i, name in enumerate(header)}


def timed_sight(page: Any, base: str, word: str, **kwargs: Any) -> tuple[float, float]:
    """``timed_edit`` (``kwargs`` go to it), read as what the person waits for: (seconds from the last keystroke to
    the last change inside the views that were in sight, seconds until the whole DOM was quiet)."""
    per_view: dict = {}
    sight: list = []
    quiet = timed_edit(page, base, word, per_view=per_view, in_sight=sight, **kwargs)
    return max((per_view[n] for n in sight if per_view.get(n) is not None), default=quiet), quiet


def shutdown_kernel(app: App, kernel_id: str) -> None:
    """Shut down a visitor's kernel through the app's kernel API (what culling does to a kernel left behind, now)."""
    request = urllib.request.Request(f"{app.base}/api/kernels/{kernel_id}", method="DELETE",
                                     headers={"Authorization": f"token {app.token}"})
    DIRECT.open(request, timeout=60)


def offline_browser() -> Iterator[Any]:
    """Headless Debian chromium in which no host name resolves (skipped without it), for a page from a file:// URL
    (the lesson, the run report): a generator for ``pytest.fixture``."""
    import pytest

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} missing: apt-get install -y chromium")
    pytest.importorskip("playwright")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, chromium_sandbox=False,
                              args=[*FLAGS, "--host-resolver-rules=MAP * ~NOTFOUND"])
        try:
            yield b
        finally:
            b.close()


def offline_page(browser: Any) -> Iterator[Any]:
    """A fresh page whose network requests are recorded and refused (file:, blob: and data: URLs load);
    ``page.seen`` lists them and any page error, dialog (an ``alert``) or console error: a generator for
    ``pytest.fixture``."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    pg.seen = {"requests": [], "errors": [], "dialogs": []}

    def route(r: Any) -> None:
        if r.request.url.startswith(("file:", "blob:", "data:")):
            r.continue_()
        else:
            pg.seen["requests"].append(r.request.url)
            r.abort()

    pg.route("**/*", route)
    pg.on("pageerror", lambda exc: pg.seen["errors"].append(str(exc)))
    pg.on("console", lambda msg: pg.seen["errors"].append(msg.text) if msg.type == "error" else None)
    pg.on("dialog", lambda d: (pg.seen["dialogs"].append(d.message), d.dismiss()))
    yield pg
    context.close()
