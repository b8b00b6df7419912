"""Where the forward passes run: in-process transformers, or a vLLM / OpenAI-compatible completions server.

Every backend honours the contract in ``base``: it receives requests that ``text.encode`` (or
``text.encode_prompt``) already turned into token ids, and returns per scored position the target's
log-prob and rank, the top-k alternatives, and the entropy where it can compute it (NaN where not).
Encoding, deduplication, the disk cache and result objects stay in ``engine``, the same for every backend.
A masked LM's copies (PLL) run in ``masked``, under its own contract (per masked copy: the scored targets'
log-probs and ranks).

``BACKENDS`` is the plug-in point: each :class:`BackendSpec` says which model kind it runs, whether it runs in this
process or on a server, and how it is made; ``load_lm(backend=...)`` / ``load_mlm(backend=...)`` pick one by name
(docs/extending.md, "A backend").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..registry import Registry
from .base import Backend, NextTokenScores, TokenScores
from .masked import MaskedBackend
from .transformers import TransformersBackend
from .vllm import connect

__all__ = ["BACKENDS", "Backend", "BackendSpec", "NextTokenScores", "TokenScores", "register_backend"]

#: The model kinds and the places a backend can run.
KINDS = ("causal", "masked")
PLACES = ("in-process", "server")


@dataclass(frozen=True)
class BackendSpec:
    """A way to run a model's forward passes, by name.

    Attributes:
        name: its name in ``load_lm(backend=...)`` / ``load_mlm(backend=...)``.
        kind: the models it runs: "causal" (``score`` / ``next_token``) or "masked" (PLL's masked copies).
        place: "in-process": ``make(model, tokenizer, device, dtype, *, name, identity)`` wraps a model loaded
            here; "server": ``make(url, tokenizer, vocab_size, *, served_model, api_key, timeout)`` connects to
            a server that runs the model (only the tokenizer and config are loaded here) and checks that it
            serves the model the tokenizer belongs to.
        make: builds the backend.
        description: one line for ``list_backends()``.
    """

    name: str
    kind: str
    place: str
    make: Callable[..., Any]
    description: str = ""


#: Every backend by name (``register_backend`` adds to it).
BACKENDS: Registry[BackendSpec] = Registry("backend", argument="backend")


def register_backend(spec: BackendSpec, *, overwrite: bool = False) -> BackendSpec:
    """Add a backend (``load_lm(backend=name)``); a taken name needs ``overwrite``."""
    if not isinstance(spec, BackendSpec):
        raise TypeError(f"spec: expected a BackendSpec, got {type(spec).__name__}")
    if spec.kind not in KINDS:
        raise ValueError(f"spec: kind must be one of {KINDS}, got {spec.kind!r}")
    if spec.place not in PLACES:
        raise ValueError(f"spec: place must be one of {PLACES}, got {spec.place!r}")
    if not callable(spec.make):
        raise TypeError(f"spec: make must be callable, got {type(spec.make).__name__}")
    return BACKENDS.register(spec.name, spec, overwrite=overwrite)


def _masked(model: Any, tokenizer: Any, device: Any, dtype: Any, *, name: str, identity: Any) -> MaskedBackend:
    return MaskedBackend(model, device, mask_id=int(tokenizer.mask_token_id), name=name)


for _spec in [
    BackendSpec("transformers", "causal", "in-process", TransformersBackend,
                "a transformers causal LM in this process (CPU, CUDA, device_map): shared prefixes, packed rows"),
    BackendSpec("masked", "masked", "in-process", _masked,
                "a transformers masked LM in this process: masked copies under a token budget"),
    BackendSpec("vllm", "causal", "server", connect,
                "a vLLM (OpenAI-compatible) completions server: token-id prompts, prompt log-probs"),
]:
    register_backend(_spec)
