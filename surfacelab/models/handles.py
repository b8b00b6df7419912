"""The loaded-model handles the rest of surfacelab receives: ``LM`` (causal) and ``MLM`` (masked), each with its
tokenizer, window, fingerprint and the backend that runs its forward passes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from ..fingerprint import Fingerprint


@dataclass
class LoadedModel:
    """Fields shared by ``LM`` and ``MLM``."""

    name: str
    model: Any
    tokenizer: Any
    device: torch.device
    dtype: torch.dtype
    fingerprint: str
    max_length: int
    source: str
    note: str = ""
    meta: dict = field(default_factory=dict)
    identity: Fingerprint | None = field(default=None, repr=False, compare=False)  # None: a server's model
    #: where the forward passes run: a backend of ``surfacelab.backends.BACKENDS`` (``backends.base.Backend``)
    backend: Any = None

    def refresh_fingerprint(self, full: bool = False) -> str:
        """``fingerprint`` for the weights as they are now: hashed again if one was edited in place or replaced
        since the last look (the engine looks before every call). An edit through ``.data`` or a NumPy view
        escapes autograd's version counter: ``full=True`` hashes the weights regardless."""
        if self.identity is not None:
            self.fingerprint = self.identity.current(full)
        return self.fingerprint

    def __repr__(self) -> str:
        if self.device is None:  # a server-backed LM
            return f"{type(self).__name__}(name={self.name!r}, backend={self.backend!r}, max_length={self.max_length})"
        return (f"{type(self).__name__}(name={self.name!r}, device={self.device.type}, "
                f"dtype={str(self.dtype).replace('torch.', '')}, max_length={self.max_length})")


@dataclass(repr=False)
class LM(LoadedModel):
    """A causal language model ready for scoring.

    ``add_bos`` says whether the tokenizer starts every sequence with BOS; ``prefix_id`` is the
    token that stands in for an empty context (BOS, or EOS where the model has no BOS). A
    server-backed LM (``load_lm(..., server=URL)``) has ``model``, ``device`` and ``dtype`` None.
    """

    add_bos: bool = False
    prefix_id: int = 0

    @property
    def vocab_size(self) -> int:
        """Number of rows of the model's output distribution (valid token ids are below it)."""
        return self.backend.vocab_size

    @property
    def bos_policy(self) -> str:
        """How sequences start: 'bos' (every sequence gets BOS) or 'none' (BOS only for an empty context)."""
        return "bos" if self.add_bos else "none"


@dataclass(repr=False)
class MLM(LoadedModel):
    """A masked language model ready for pseudo-log-likelihood scoring."""

    mask_id: int = 0
