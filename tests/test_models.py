"""Model loading: presets, loaded pairs, fingerprints, devices, errors."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

import surfacelab as sl
from surfacelab import fingerprint, models, paths

from tiny_models import tiny_causal


def test_list_presets():
    p = sl.list_presets()
    assert {"smollm2-135m", "gemma-3-270m", "splade-tiny"} <= set(p["preset"])
    assert sl.DEFAULT_LM == "smollm2-135m"
    assert p.set_index("preset").loc["splade-tiny", "note"]  # retrieval-tuned label present


def test_unknown_preset_names_the_argument():
    with pytest.raises(ValueError, match="name_or_path.*smollm2-135n.*did you mean"):
        sl.load_lm("smollm2-135n")


def test_wrong_kind_preset():
    with pytest.raises(ValueError, match="masked"):
        sl.load_lm("splade-tiny")


def test_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="name_or_path"):
        sl.load_lm(str(tmp_path / "nope" / "x"))


def test_bad_dtype(tiny_lm):
    with pytest.raises(ValueError, match="dtype"):
        sl.load_lm((tiny_lm.model, tiny_lm.tokenizer), dtype="float8")


def test_loaded_pair_and_fingerprint(tiny_lm):
    again = sl.load_lm((tiny_lm.model, tiny_lm.tokenizer), device="cpu")
    assert again.fingerprint == tiny_lm.fingerprint
    assert again.bos_policy == "none" and again.dtype == torch.float32
    model, tokenizer = tiny_causal()
    as_bf16 = sl.load_lm((model, tokenizer), dtype="bf16")
    assert as_bf16.dtype == torch.bfloat16 and as_bf16.fingerprint != tiny_lm.fingerprint


def test_folder_roundtrip(tiny_lm, tmp_path):
    tiny_lm.model.save_pretrained(tmp_path)
    tiny_lm.tokenizer.save_pretrained(tmp_path)
    lm = sl.load_lm(str(tmp_path), device="cpu")
    assert lm.fingerprint == tiny_lm.fingerprint


@pytest.mark.slow
def test_preset_reload_and_fingerprint_stable_across_processes(real_lm):
    code = "import surfacelab as sl; print(sl.load_lm('smollm2-135m', device='cpu').fingerprint)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == real_lm.fingerprint
    assert (paths.cache_dir() / "models" / "smollm2-135m" / "config.json").exists()
    assert real_lm.bos_policy == "none" and real_lm.prefix_id == real_lm.tokenizer.bos_token_id


@pytest.mark.slow
def test_splade_is_labelled(real_mlm):
    assert "retrieval" in real_mlm.note


def test_max_length_past_the_position_table_is_refused(tiny_lm):
    with pytest.raises(ValueError, match="max_length: 128 exceeds the model's position table of 64 .*n_positions"):
        sl.load_lm((tiny_lm.model, tiny_lm.tokenizer), max_length=128)
    assert sl.load_lm((tiny_lm.model, tiny_lm.tokenizer), max_length=64).max_length == 64
    assert sl.load_lm((tiny_lm.model, tiny_lm.tokenizer)).max_length == 64


_HOLD_TEMP = """
import os, signal, sys, time
from pathlib import Path
from surfacelab.models.packaged import temp_folder
with temp_folder(Path(sys.argv[1])) as tmp:
    (tmp / "model.safetensors").write_bytes(b"x" * 1000)
    print(tmp, flush=True)
    if sys.argv[2] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(120)
"""


@pytest.mark.process
def test_a_killed_conversion_is_cleaned_up_and_a_live_one_kept(tmp_path):
    target = tmp_path / "models" / "smollm2-135m"
    killed = subprocess.run([sys.executable, "-c", _HOLD_TEMP, str(target), "kill"], capture_output=True, text=True)
    assert killed.returncode == -9  # SIGKILL: no finally block ran
    left = Path(killed.stdout.strip())
    assert left.is_dir() and left.name.startswith("smollm2-135m.tmp-")
    live = subprocess.Popen([sys.executable, "-c", _HOLD_TEMP, str(target), "hold"], stdout=subprocess.PIPE, text=True)
    try:
        busy = Path(live.stdout.readline().strip())
        assert busy.is_dir()
        assert models.clean_stale_temp(target) == [left]
        assert not left.exists() and busy.is_dir()  # another process's conversion in progress is left alone
    finally:
        live.kill()
        live.wait()
    assert models.clean_stale_temp(target) == [busy]  # once that process is gone, its folder goes too


@pytest.mark.slow
def test_conversion_removes_what_a_killed_one_left(tmp_path, monkeypatch):
    monkeypatch.setenv("SURFACELAB_CACHE", str(tmp_path))
    target = tmp_path / "models" / "smollm2-135m"
    killed = subprocess.run([sys.executable, "-c", _HOLD_TEMP, str(target), "kill"], capture_output=True, text=True)
    left = Path(killed.stdout.strip())
    assert left.is_dir()
    folder = models.PRESETS["smollm2-135m"].locate(paths.cache_dir())
    assert folder == target and (target / "config.json").exists()
    assert not list(target.parent.glob("smollm2-135m.tmp-*"))


def test_a_load_with_a_progress_callback_prints_no_bars_of_its_own(tmp_path, capfd):
    # the workbench reports a load in its own bar; transformers' "Loading weights" bars would print into the cell
    model, tokenizer = tiny_causal()
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    capfd.readouterr()
    sl.load_lm(str(tmp_path / "m"))  # without a callback: transformers shows its bars as usual
    assert "Loading weights" in capfd.readouterr().err
    steps = []
    sl.load_lm(str(tmp_path / "m"), progress=lambda fraction, step: steps.append(step))
    out = capfd.readouterr()
    assert steps and "Loading weights" not in out.err + out.out
    from transformers.utils import logging as hf_logging
    assert hf_logging.is_progress_bar_enabled()  # and they are back on after it


def test_a_preset_loads_without_bars(tmp_path, capfd):
    # a preset's converted copy loads in about a second: its "Loading weights" bar printed into every notebook run
    model, tokenizer = tiny_causal()
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    preset = models.Preset("tiny-test-preset", "causal", "", None, "a saved tiny model", lambda cache: tmp_path / "m")
    models.PRESETS.register(preset.name, preset)
    try:
        capfd.readouterr()
        sl.load_lm(preset.name)
        out = capfd.readouterr()
        assert "Loading weights" not in out.err + out.out
        sl.load_lm(str(tmp_path / "m"))  # a folder of the user's own (maybe a large model): the bars stay
        assert "Loading weights" in capfd.readouterr().err
    finally:
        models.PRESETS.unregister(preset.name)


def test_the_fingerprint_hashes_every_value_of_every_tensor(tiny_lm):
    model, tokenizer = tiny_causal()
    with torch.no_grad():  # one value that a strided sample of 512 per tensor skips (every 8th of 128 x 32)
        model.transformer.h[0].mlp.c_proj.weight[0, 1] += 1e-3
    assert sl.load_lm((model, tokenizer), device="cpu").fingerprint != tiny_lm.fingerprint


def test_the_fingerprint_follows_in_place_edits_and_replaced_parameters(monkeypatch):
    lm = sl.load_lm(tiny_causal(), device="cpu")
    loaded = lm.fingerprint
    hashed = []
    real = fingerprint.weights_digest
    monkeypatch.setattr(fingerprint, "weights_digest", lambda model: hashed.append(1) or real(model))
    assert lm.refresh_fingerprint() == loaded and not hashed  # nothing changed: nothing re-hashed
    with torch.no_grad():  # ablate MLP neuron 5 in every layer
        for block in lm.model.transformer.h:
            block.mlp.c_proj.weight[5] = 0
    edited = lm.refresh_fingerprint()
    assert edited != loaded and lm.fingerprint == edited and len(hashed) == 1
    mlp = lm.model.transformer.h[1].mlp
    mlp.c_fc.weight = torch.nn.Parameter(mlp.c_fc.weight.clone(), requires_grad=False)  # the same values
    assert lm.refresh_fingerprint() == edited
    mlp.c_fc.weight = torch.nn.Parameter(mlp.c_fc.weight * 2, requires_grad=False)
    assert lm.refresh_fingerprint() not in (loaded, edited)
    lm.model.transformer.ln_f.weight.data[0] += 1  # through ``.data``: autograd's version counter misses it
    changed = lm.fingerprint
    assert lm.refresh_fingerprint() == changed and lm.refresh_fingerprint(full=True) != changed
    lm.model.load_state_dict(tiny_causal()[0].state_dict())  # the weights it was loaded with
    assert lm.refresh_fingerprint() == loaded


def test_the_first_forwards_are_a_step_of_the_load_not_of_the_first_score(monkeypatch):
    # the backend's self-check (the model's first forwards) ran inside the first score: a workbench charged its
    # seconds to whichever view scored first
    from surfacelab import engine
    from surfacelab.backends.transformers import TransformersBackend
    from surfacelab.models.progress import WARM_UP

    steps, checks, threads, before = [], [], [], torch.get_num_threads()
    probe = TransformersBackend._check_shortcuts  # the self-check's forwards (warm_up runs them once)

    def spy(self):
        checks.append(steps[-1] if steps else None)
        threads.append(torch.get_num_threads())
        return probe(self)

    monkeypatch.setattr(TransformersBackend, "_check_shortcuts", spy)
    lm = sl.load_lm(tiny_causal(), device="cpu", progress=lambda fraction, step: steps.append(step))
    assert steps[-1] == WARM_UP and checks == [WARM_UP]
    # on one torch thread (short probes: a second thread waits for a core on a busy machine), then as before
    assert threads == [1] and torch.get_num_threads() == before
    steps.append("scoring")
    engine.logprobs(lm, [("the dog", " ate")], cache=False, progress=False)
    assert checks == [WARM_UP]  # the score's own forwards only (the check ran once, in the load)
