"""A model's cache identity: a content hash of every weight, taken again only when one changed.

``Fingerprint`` combines the model's type, config, vocabulary and dtype (hashed once) with ``weights_digest``
(every byte of every parameter and buffer), which it takes again only when ``tensor_versions`` moved: a weight
edited in place or replaced. The engine asks before every call (``LM.refresh_fingerprint``), so an ablated or
edited model never gets the cached numbers of the weights it had.
"""

from __future__ import annotations

import hashlib
import json
import threading
from typing import Any

import torch
from xxhash import xxh3_128  # about 10 GB/s on one core (sha256: about 1 GB/s)


#: Bytes of a tensor hashed at once (a GPU tensor goes to the host one chunk at a time).
HASH_CHUNK = 1 << 26


def weights_digest(model: torch.nn.Module) -> str:
    """A content hash of every parameter and buffer: its name, dtype, shape and every byte."""
    h = xxh3_128()
    for name, t in (*model.named_parameters(), *model.named_buffers()):
        raw = t.detach().reshape(-1).view(torch.uint8)
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}".encode())
        for a in range(0, raw.numel(), HASH_CHUNK):
            h.update(raw[a:a + HASH_CHUNK].cpu().numpy())
    return h.hexdigest()


def tensor_versions(model: torch.nn.Module) -> list[tuple[int, int, int]]:
    """(object, storage address, in-place version) of every parameter and buffer: it moves when one is edited in
    place (autograd's version counter; not through ``.data``) or replaced (``module.weight = ...``). An inference
    tensor has no counter (-1): it cannot be edited outside ``torch.inference_mode``."""
    return [(id(t), t.data_ptr(), -1 if t.is_inference() else t._version)
            for m in model.modules() for t in (*m._parameters.values(), *m._buffers.values()) if t is not None]


_VOLATILE_CONFIG = {"_name_or_path", "architectures", "transformers_version", "dtype", "torch_dtype", "_commit_hash"}


class Fingerprint:
    """A model's cache identity: its type, config, vocabulary and dtype, and ``weights_digest``, taken again only
    when ``tensor_versions`` moved (a few milliseconds to look; see docs/benchmarks.md)."""

    def __init__(self, model: Any, tokenizer: Any, dtype: torch.dtype) -> None:
        self.model = model
        h = hashlib.sha256(type(model).__name__.encode())
        config = {k: v for k, v in model.config.to_dict().items() if k not in _VOLATILE_CONFIG}
        h.update(json.dumps(config, sort_keys=True, default=str).encode())
        h.update(hashlib.sha256(json.dumps(sorted(tokenizer.get_vocab().items())).encode()).digest())
        h.update(str(dtype).encode())
        self._fixed = h.hexdigest()
        self._versions: list[tuple[int, int, int]] | None = None
        self._lock = threading.Lock()
        self.value = self.current()

    def current(self, full: bool = False) -> str:
        """The fingerprint of the weights as they are now; ``full``: hash them even if no counter moved."""
        with self._lock:
            versions = tensor_versions(self.model)
            if full or versions != self._versions:
                self._versions = versions
                digest = weights_digest(self.model)
                self.value = hashlib.sha256(f"{self._fixed}|{digest}".encode()).hexdigest()[:32]
            return self.value
