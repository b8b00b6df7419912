"""Load causal and masked language models: presets, hub ids, local folders or loaded pairs.

Presets resolve from registry packages that ship real weights (see ``list_presets()``); a GGUF
preset is converted once into a plain safetensors copy under the surfacelab cache dir
(``SURFACELAB_CACHE`` overrides it) and reloaded from there in about a second. A loaded model runs its forward
passes on a backend of ``surfacelab.backends.BACKENDS`` (``list_backends()``).

Modules: ``presets`` (the named models), ``packaged`` (installed packages, the GGUF conversion), ``handles`` (``LM``,
``MLM``), ``devices``, ``progress`` (a load's progress callback), ``loading`` (``load_lm``, ``load_mlm``).
"""

from __future__ import annotations

import pandas as pd

from ..backends import BACKENDS
from .devices import auto_device
from .handles import LM, MLM, LoadedModel
from .loading import DEFAULT_BACKENDS, load_lm, load_mlm
from .packaged import STALE_TEMP_S, clean_stale_temp
from .presets import (DEFAULT_LM, DEFAULT_MLM, PRESETS, RETRIEVAL_NOTE, Preset, PresetNotInstalled, list_presets,
                      register_preset)
from .progress import Progress

__all__ = ["DEFAULT_BACKENDS", "DEFAULT_LM", "DEFAULT_MLM", "LM", "MLM", "PRESETS", "RETRIEVAL_NOTE", "STALE_TEMP_S",
           "LoadedModel", "Preset", "PresetNotInstalled", "Progress", "auto_device", "clean_stale_temp",
           "list_backends", "list_presets", "load_lm", "load_mlm", "register_preset"]


def list_backends() -> pd.DataFrame:
    """The backends a model can run on: name, kind (causal / masked), place (in-process / server), whether it is the
    default there, and what it is."""
    return pd.DataFrame([{"backend": s.name, "kind": s.kind, "place": s.place,
                          "default": DEFAULT_BACKENDS.get((s.kind, s.place)) == s.name, "description": s.description}
                         for s in BACKENDS.values()])
