"""An API key goes only to the server it was given for: a recording HTTP server on 127.0.0.1 shows what each
request carried. A URL that arrives in a file (a saved state, the saved-states picker) is contacted without a key
until the person confirms it; a key from the environment goes only to ``$SURFACELAB_SERVER``."""

from __future__ import annotations

import json

import pytest

import surfacelab as sl
from surfacelab.backends.transport import ServerError
from surfacelab.widgets import Workbench
from recording import recording
from tiny_models import tiny_causal

KEY = "sk-lab-key-never-for-strangers"


@pytest.fixture
def recorder():
    """A server that answers every request 401 (as a keyed vLLM server does to a wrong or missing key)."""
    with recording({"error": {"message": "Unauthorized"}}, get=401, post=401) as served:
        yield served


@pytest.fixture(autouse=True)
def no_key_in_the_environment(monkeypatch):
    monkeypatch.delenv("SURFACELAB_API_KEY", raising=False)
    monkeypatch.delenv("SURFACELAB_SERVER", raising=False)


def _state(tmp_path, server: str, lm: str):
    path = tmp_path / "student.json"
    path.write_text(json.dumps({"format": "surfacelab-workbench-state", "version": 1, "premise": "The cat sat on the",
                                "domain_premise": " the", "options": [" mat", " hat"], "paraphrases": ["", ""],
                                "gold": 0, "lm": lm, "server": server, "mlm": None}))
    return path


def _keys(seen) -> set:
    return {auth for _, _, auth in seen}


def test_a_key_from_the_environment_goes_only_to_surfacelab_server(recorder, monkeypatch):
    url, seen = recorder
    monkeypatch.setenv("SURFACELAB_API_KEY", KEY)
    with pytest.raises(ServerError, match=r"none was sent.*|SURFACELAB_SERVER"):
        sl.load_lm(tiny_causal(), server=url)
    assert seen and _keys(seen) == {None}  # $SURFACELAB_SERVER unset: the key is bound to no server
    monkeypatch.setenv("SURFACELAB_SERVER", "http://127.0.0.1:1/v1")
    seen.clear()
    with pytest.raises(ServerError):
        sl.load_lm(tiny_causal(), server=url)
    assert seen and _keys(seen) == {None}  # bound to another server
    monkeypatch.setenv("SURFACELAB_SERVER", url.removesuffix("/v1"))  # the same server, written without /v1
    seen.clear()
    with pytest.raises(ServerError, match=r"a key was sent"):
        sl.load_lm(tiny_causal(), server=url)
    assert _keys(seen) == {f"Bearer {KEY}"}


def test_a_state_file_never_sends_the_key_to_the_server_it_names(recorder, model_dir, tiny_lm, tiny_mlm, tmp_path):
    url, seen = recorder
    path = _state(tmp_path, url, model_dir)
    # from_state with the person's key: the file's server is contacted, without it
    with pytest.raises(ServerError, match=r"none was sent"):
        Workbench.from_state(path, api_key=KEY, mlm=tiny_mlm, live=False)
    assert seen and _keys(seen) == {None}
    # load_state into a workbench that holds a key: the file's server gets no key, and the person is offered one
    seen.clear()
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, api_key=KEY, export_dir=tmp_path)
    bench.load_state(path)
    bench.update()
    assert seen and _keys(seen) == {None}
    assert "none was sent" in bench.message.value and bench.lm is tiny_lm  # the views keep the model they had
    assert bench.models.trust_button.layout.display != "none"
    # the saved-states picker reads the same file: no key either
    seen.clear()
    bench.examples.source_picker.value = "saved states"
    bench.examples.item_picker.value = "student.json"
    bench.update()
    assert seen and _keys(seen) == {None}
    # the person confirms the server: now, and only now, the key goes there
    seen.clear()
    bench.models.trust_button.click()
    bench.wait(60)
    assert _keys(seen) == {f"Bearer {KEY}"} and bench.models.trust_button.layout.display == "none"
    assert KEY not in json.dumps(bench.state()) and KEY not in bench.message.value
    bench.close()


def test_a_server_given_in_code_or_typed_gets_the_key(recorder, tiny_lm, tiny_mlm, model_dir, tmp_path):
    url, seen = recorder
    with pytest.raises(ServerError, match=r"a key was sent"):  # server= and api_key= in one call: the key is for it
        Workbench(lm=model_dir, mlm=tiny_mlm, live=False, server=url, api_key=KEY)
    assert _keys(seen) == {f"Bearer {KEY}"}
    seen.clear()
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, api_key=KEY, export_dir=tmp_path)
    bench.models.lm_picker.options = [*bench.models.lm_picker.options, model_dir]
    bench.models.lm_picker.value = model_dir
    bench.models.server_box.value = url  # typed by the person
    bench.update()
    assert _keys(seen) == {f"Bearer {KEY}"} and bench.models.trust_button.layout.display == "none"
    bench.close()


def test_with_neither_an_lm_nor_a_server_the_workbench_takes_surfacelab_server(monkeypatch):
    from surfacelab.widgets.workbench.models import default_server

    monkeypatch.setenv("SURFACELAB_SERVER", " http://gpu-box:8000 ")  # make app SERVER=...
    assert default_server(None, None) == "http://gpu-box:8000/v1"
    assert default_server("smollm2-135m", None) is None  # an LM asked for by name: in-process, as before
    assert default_server(None, "http://other:1/v1") == "http://other:1/v1"  # a server given wins
    assert default_server(None, "") == ""  # "" given: in-process
    monkeypatch.setenv("SURFACELAB_SERVER", "")  # make app without SERVER=
    assert default_server(None, None) is None
    monkeypatch.setenv("SURFACELAB_SERVER", "gpu-box:8000")
    with pytest.raises(ValueError, match=r"^\$SURFACELAB_SERVER: .*http\(s\) URL"):
        default_server(None, None)


@pytest.mark.slow  # the default preset's tokenizer (its converted copy)
def test_workbench_without_an_lm_scores_on_surfacelab_server_with_its_key(recorder, tiny_lm, tiny_mlm, monkeypatch,
                                                                          tmp_path):
    url, seen = recorder
    monkeypatch.setenv("SURFACELAB_SERVER", url)
    monkeypatch.setenv("SURFACELAB_API_KEY", KEY)
    with pytest.raises(ServerError, match=r"a key was sent"):  # the recorder refuses every key
        Workbench(mlm=tiny_mlm, live=False, export_dir=tmp_path)
    assert _keys(seen) == {f"Bearer {KEY}"}
    seen.clear()
    bench = Workbench(lm=tiny_lm, mlm=tiny_mlm, live=False, export_dir=tmp_path)  # an LM given: no server
    assert seen == [] and bench.models.server_box.value == ""
    bench.close()
