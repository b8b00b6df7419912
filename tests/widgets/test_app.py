"""The app policy (``make app``): a visitor cannot make the kernel contact a URL, write outside a folder of their own
or start work of any size. A recording HTTP server on 127.0.0.1 holds a secret, and shows every request that reached
it; the workbench and the explorer are made under the app's policy (``AppPolicy``) as ``make app`` makes them, and
driven as the browser drives them (a widget's value set, a button clicked). The browser itself:
``tests/browser/test_app_browser.py``."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

import surfacelab as sl
from surfacelab.backends.transport import ServerError
from surfacelab.widgets import Explorer, ViewState, Workbench
from surfacelab.widgets.app import APP_CAPS, NO_SERVER, VISITORS, AppPolicy, Caps
from surfacelab.widgets.kit.files import LINK_LIMIT
from recording import recording
from tiny_models import tiny_causal

SECRET = "s3cr3t-db-password-of-the-host"
PREMISE = "The man took a bath in the"
OPTIONS = [" bathtub", " soap", " milk", " mat"]


@pytest.fixture
def secretive():
    """A service on this machine that is no vLLM server: every GET answered with its secret JSON (200), every POST
    with the same in an error (400)."""
    with recording({"secret": SECRET, "config": {"password": SECRET}}, get=200, post=400) as served:
        yield served


@pytest.fixture(autouse=True)
def no_app_in_the_environment(monkeypatch):
    for name in ("SURFACELAB_APP", "SURFACELAB_APP_DIR", "SURFACELAB_SERVER", "SURFACELAB_API_KEY",
                 *(f"SURFACELAB_MAX_{k}" for k in ("PREMISE_CHARS", "OPTION_CHARS", "OPTIONS", "ITEMS"))):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def app(tmp_path):
    """The policy of a kernel of ``make app`` (its app folder in ``tmp_path``)."""
    return AppPolicy.from_env({"SURFACELAB_APP": "1", "SURFACELAB_APP_DIR": str(tmp_path / "app")})


@pytest.fixture
def visitor(app, tiny_lm, tiny_mlm):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, policy=app)
    bench.premise_box.value = PREMISE
    bench.set_options(OPTIONS, gold=0)
    yield bench
    bench.close()


def _state(path: Path, server: str | None, lm: str | None = None) -> Path:
    path.write_text(json.dumps({"format": "surfacelab-workbench-state", "version": 1, "premise": "The cat sat on the",
                                "domain_premise": " the", "options": [" mat", " hat"], "paraphrases": ["", ""],
                                "gold": 0, "lm": lm, "server": server, "mlm": None}))
    return path


# --- the policy ---------------------------------------------------------------------------------------------------


def test_the_policy_is_read_from_the_environment_make_app_sets(tmp_path):
    assert AppPolicy.from_env({}) == AppPolicy() and AppPolicy().caps == Caps()  # outside the app: no caps
    app = AppPolicy.from_env({"SURFACELAB_APP": "1", "SURFACELAB_APP_DIR": str(tmp_path)})
    assert app.app and app.folder == tmp_path and app.caps == APP_CAPS
    assert all(getattr(APP_CAPS, name) for name in ("premise_chars", "option_chars", "options", "items"))
    # whoever runs the app sets each cap, or turns it off; outside the app a cap is off unless set
    env = {"SURFACELAB_APP": "1", "SURFACELAB_APP_DIR": str(tmp_path), "SURFACELAB_MAX_ITEMS": "50",
           "SURFACELAB_MAX_OPTIONS": "off"}
    caps = AppPolicy.from_env(env).caps
    assert caps.items == 50 and caps.options is None and caps.premise_chars == APP_CAPS.premise_chars
    assert AppPolicy.from_env({"SURFACELAB_MAX_PREMISE_CHARS": "4000"}).caps == Caps(premise_chars=4000)
    for env, named in [({"SURFACELAB_APP": "yes"}, r"\$SURFACELAB_APP: expected 1"),
                       ({"SURFACELAB_APP": "1"}, r"\$SURFACELAB_APP_DIR: .*absolute path"),
                       ({"SURFACELAB_APP": "1", "SURFACELAB_APP_DIR": "app"}, r"\$SURFACELAB_APP_DIR: .*absolute"),
                       ({"SURFACELAB_MAX_ITEMS": "0"}, r"\$SURFACELAB_MAX_ITEMS: expected a positive whole number"),
                       ({"SURFACELAB_MAX_OPTION_CHARS": "3e2"}, r"\$SURFACELAB_MAX_OPTION_CHARS: .*'3e2'")]:
        with pytest.raises(ValueError, match=named):
            AppPolicy.from_env(env)
    with pytest.raises(ValueError, match="visitor_folder: only a kernel of the app"):
        AppPolicy().visitor_folder()
    with pytest.raises(ValueError, match="options: expected a cap >= 1"):
        Caps(options=0)


@pytest.mark.process
def test_each_kernel_gets_a_folder_of_its_own_that_nobody_else_reads(tmp_path):
    # two kernels: two processes reading the same environment (what make app gives every visitor's kernel)
    import subprocess
    import sys

    env = dict(os.environ, SURFACELAB_APP="1", SURFACELAB_APP_DIR=str(tmp_path / "app"))
    code = ("from surfacelab.widgets.app import AppPolicy; p = AppPolicy.from_env(); "
            "assert p.visitor_folder() == p.visitor_folder(); print(p.visitor_folder())")
    folders = [Path(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                   check=True).stdout.strip()) for _ in range(2)]
    assert folders[0] != folders[1]
    for folder in folders:
        assert folder.parent == tmp_path / "app" / VISITORS and len(folder.name) >= 24  # unguessable
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "app" / VISITORS).stat().st_mode) == 0o700


# --- 7: the server box ------------------------------------------------------------------------------------------


def test_outside_the_app_a_server_error_names_the_failure_not_the_answers_content(secretive, tiny_lm, tiny_mlm,
                                                                                  model_dir, tmp_path):
    url, seen = secretive
    with pytest.raises(ServerError) as err:  # GET /models answers 200 with a JSON that is no list of models
        sl.load_lm(tiny_causal(), server=url)
    assert SECRET not in str(err.value) and "password" not in str(err.value)
    assert "malformed answer to GET /models" in str(err.value) and "not a list of models" in str(err.value)
    # typed into the lab's server box: contacted (the person's own choice), the page shows why it failed, no secret
    seen.clear()
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)
    bench.models.lm_picker.options = [*bench.models.lm_picker.options, model_dir]
    bench.models.lm_picker.value = model_dir
    bench.models.server_box.value = url
    bench.update()
    assert seen and SECRET not in bench.message.value and "not a list of models" in bench.message.value
    bench.close()


def test_a_refusal_quotes_the_servers_own_message_and_never_a_json_documents_content():
    import httpx

    from surfacelab.backends.vllm_checks import REASON_CHARS, error_message

    def answer(status: int, body: str, kind: str = "application/json") -> httpx.Response:
        return httpx.Response(status, content=body.encode(), headers={"content-type": kind})

    vllm = answer(400, json.dumps({"error": {"message": "Token id 49152 is out of vocabulary\n\x1b[31m"}}))
    assert error_message(vllm) == "Token id 49152 is out of vocabulary \\x1b[31m"  # one line, escaped
    assert error_message(answer(422, json.dumps({"detail": "x" * 5000}))).endswith("…")
    assert len(error_message(answer(422, json.dumps({"detail": "x" * 5000})))) == REASON_CHARS
    for status, body, kind in [(400, json.dumps({"secret": SECRET}), "application/json"),
                               (404, json.dumps({"detail": [{"msg": SECRET}]}), "application/json"),
                               (500, f"<html><body>{SECRET}</body></html>", "text/html")]:
        said = error_message(answer(status, body, kind))
        assert SECRET not in said and kind in said and f"{len(body):,} bytes" in said, said


def test_in_the_app_no_server_a_visitor_types_or_a_file_names_is_ever_contacted(secretive, visitor, app, tiny_lm,
                                                                                 tiny_mlm):
    url, seen = secretive
    box = visitor.models.server_box
    assert box.disabled and box.value == NO_SERVER  # the models run in this kernel: said, not editable
    box.value = url  # what a browser that ignores "disabled" sends
    visitor.update()
    assert seen == [] and visitor.views["scores"].state == ViewState.READY and visitor.lm is tiny_lm
    # a saved state that names the server, loaded three ways: ignored, with a note that says so
    path = _state(visitor.exporter.export_dir / "theirs.json", url)
    visitor.load_state(path)
    visitor.update()
    assert seen == [] and "ignored" in visitor.message.value and url in visitor.message.value
    visitor.examples.source_picker.value = "saved states"
    visitor.examples.item_picker.value = "theirs.json"
    visitor.update()
    assert seen == [] and visitor.premise_box.value == "The cat sat on the"
    again = Workbench.from_state(path, lm=tiny_lm, mlm=tiny_mlm, live=False, policy=app)
    again.update()
    assert seen == [] and again.lm is tiny_lm and "ignored" in again.message.value
    # a model the file names that the app does not offer (a folder on the host) is not loaded either
    again.load_state(_state(visitor.exporter.export_dir / "model.json", None, lm="/etc"))
    again.update()
    assert again.lm is tiny_lm and "/etc" in again.message.value and "is not one of this app" in again.message.value
    assert SECRET not in visitor.message.value + again.message.value
    # a saved state keeps the app's server (none here), never the text the box shows
    assert visitor.state()["server"] is None
    again.close()


# --- 8: the visitor's own folder ---------------------------------------------------------------------------------


def test_in_the_app_every_file_goes_to_the_visitors_own_folder_and_comes_back_as_a_download(visitor, app, tmp_path):
    own = app.visitor_folder()
    box = visitor.exporter.folder_box
    assert visitor.exporter.export_dir == own and box.layout.display == "none" and box.disabled
    visitor.examples.source_picker.value = "saved states"  # none yet: said without naming a place on the host
    assert "No saved states in your folder" in visitor.message.value and str(tmp_path) not in visitor.message.value
    visitor.examples.source_picker.value = "(custom)"
    elsewhere = tmp_path / "elsewhere"
    visitor.exporter.folder_box.value = str(elsewhere)  # what a browser that shows the box anyway could send
    visitor.update()
    visitor.exporter.save_button.click()
    visitor.views["scores"].export_buttons[2].click()  # CSV
    visitor.views["scores"].export_buttons[1].click()  # HTML
    assert not elsewhere.exists()
    files = sorted(p.name for p in own.iterdir())
    assert len(files) == 3 and files[0].startswith("scores-") and files[-1].startswith("state-"), files
    for note in (visitor.exporter.note.value, visitor.views["scores"].export_note.value):
        assert "class='sl-download'" in note and "href='data:" in note
        assert str(own) not in note and str(tmp_path) not in note  # no path of the host in the page
    # the page downloaded alone opens offline: plotly.js inside, nothing read from beside it
    page = next(own.glob("scores-*.html"))
    text = page.read_text()
    assert 'src="plotly-' not in text and "plotly.js v" in text
    assert page.stat().st_size < LINK_LIMIT and not list(own.glob("plotly-*.js"))
    # saved states are listed from the visitor's folder only
    _state(app.folder / "someone-elses.json", None)
    visitor.examples.source_picker.value = "saved states"
    assert list(visitor.examples.item_picker.options) == [files[-1]]
    # a folder given in code is refused in the app: the visitor's is the only one
    with pytest.raises(ValueError, match="export_dir: in the app every visitor writes into a folder of their own"):
        Workbench(lm=visitor.lm, mlm=visitor.mlm, export_dir=tmp_path, policy=app)
    # the lesson button builds a lesson of the item shown, not the teaching set's 30 items
    assert [v for _, v in visitor.lessons.picker.options] == ["item"]


def test_in_the_app_the_explorers_sessions_and_exports_stay_in_the_visitors_folder(app, tiny_lm, tmp_path):
    ex = Explorer(tiny_lm, task="copa", n=8, chunk=4, policy=app)
    assert ex.files.folder_box.layout.display == "none" and ex.files.folder == app.visitor_folder() / "explorer"
    ex.files.folder_box.value = str(tmp_path / "elsewhere")
    ex.files.handle(ex.load_session, "loaded")  # nothing saved yet: said without naming a place on the host
    assert "no session.json in &#x27;your folder/explorer&#x27;" in ex.files.note.value
    assert str(tmp_path) not in ex.files.note.value
    assert ex.run() is not None and ex.wait(120)
    ex.files.handle(lambda f: ex.export(f / "summary.png"))
    assert "class='sl-download'" in ex.files.note.value and str(tmp_path) not in ex.files.note.value
    ex.files.handle(ex.save_session, "saved")
    assert ex.files.note.value == "<span class='sl-info'>saved the session</span>"
    assert (ex.files.folder / "session.json").is_file() and (ex.files.folder / "summary.png").is_file()
    assert not (tmp_path / "elsewhere").exists()
    with pytest.raises(ValueError, match="folder: in the app"):
        Explorer(tiny_lm, folder=tmp_path, policy=app)
    ex.close()


# --- 9: caps on what a visitor picks ---------------------------------------------------------------------------


def test_a_premise_over_the_cap_is_refused_at_once_naming_it_and_the_cap(tiny_lm, tiny_mlm, tmp_path):
    capped = AppPolicy(caps=Caps(premise_chars=4000, option_chars=300, options=12))  # outside the app, switched on
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=True, debounce=0, export_dir=tmp_path, policy=capped)
    bench.wait()
    start = time.perf_counter()
    bench.premise_box.value = "word " * 1_880_000  # 9.4 MB, typed (the live path) ...
    bench.wait()
    bench.update()  # ... and Score
    took = time.perf_counter() - start
    assert took < 1.0, took  # nothing tokenized, let alone scored (tokenizing it alone takes seconds)
    assert "The premise is 9,400,000 characters long; this workbench takes at most 4,000" in bench.message.value
    assert all(v.state == ViewState.BLOCKED for v in bench.views.values())
    bench.premise_box.value = PREMISE
    bench.domain_box.value = " x" * 2001
    bench.update()
    assert "The domain premise is 4,002 characters long" in bench.message.value
    bench.domain_box.value = " the"
    bench.rows[1].text.value = " soap" * 100
    bench.rows[2].paraphrases.value = ", ".join(f"form{i}" for i in range(13))
    bench.update()
    assert "Option 2 is 500 characters long; this workbench takes at most 300" in bench.message.value
    bench.rows[1].text.value = " soap"
    bench.update()
    assert "Option 3 has 13 paraphrases; this workbench takes at most 12" in bench.message.value
    assert bench.views["paraphrase"].state == ViewState.BLOCKED
    assert bench.views["scores"].state == ViewState.READY  # a paraphrase over the cap holds its own view alone
    # the preview of a long option never echoes it whole to the page
    bench.rows[1].text.value = " soap" * 100
    assert len(bench.rows[1].join.value) < 400
    bench.close()


def test_options_over_the_cap_are_refused_before_any_row_is_made(tiny_lm, tiny_mlm, tmp_path):
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path,
                      policy=AppPolicy(caps=Caps(options=12)))
    start = time.perf_counter()
    with pytest.raises(ValueError, match="options: 1,000 options; this workbench takes at most 12 per item"):
        bench.set_options([f" option {i}" for i in range(1000)])
    assert time.perf_counter() - start < 0.5 and len(bench.rows) == 4
    with pytest.raises(ValueError, match="at most 12"):  # a saved state of 13: nothing of it is loaded
        bench.load_example({"premise": "A", "options": [f" o{i}" for i in range(13)]})
    assert bench.premise_box.value == "The man took a bath in the"
    for _ in range(8):
        bench.option_list.add_button.click()
    add = bench.option_list.add_button
    assert len(bench.rows) == 12 and add.disabled and "at most 12" in add.tooltip
    bench.option_list.add_button.click()  # a click sent anyway: refused, said
    assert len(bench.rows) == 12 and "at most 12" in bench.message.value
    bench.close()


def test_an_items_box_over_the_cap_starts_nothing(tiny_lm):
    ex = Explorer(tiny_lm, task="mmlu", n=1_000_000, policy=AppPolicy(caps=Caps(items=1000)))
    start = time.perf_counter()
    assert ex.run() is None and time.perf_counter() - start < 0.5 and not ex.runs
    assert "items: 1,000,000 asked; this explorer runs at most 1,000 items per run" in ex.message.value
    ex.n_box.value = 1000
    assert ex.load_task() is not None  # at the cap: fine
    ex.close()


def test_the_explorer_page_of_the_app_runs_only_the_cell_that_shows_the_explorer():
    # the notebook's section on the methods beyond the four fixes ran in every visitor's kernel (make app drops the
    # cells tagged not-in-app): three evaluations nobody asked for, ahead of the visitor's own Run
    nb = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "06_explore_a_dataset.ipynb").read_text())
    kept = ["".join(c["source"]) for c in nb["cells"]
            if c["cell_type"] == "code" and "not-in-app" not in c.get("metadata", {}).get("tags", [])]
    assert len(kept) == 1 and "sl.Explorer(" in kept[0] and "display(ex, wb)" in kept[0], kept
