"""What a model's attention allows the engine to do, decided from its config.

The engine has three ways to run requests (``plan``): *plain* rows (one request per row, the
model's own causal mask; valid for every causal LM), *packed* rows (several requests in one row,
each shared prefix once at any depth, under a 4-D mask that lets a token see only its own request's earlier
tokens, and each request's own position ids) and a *kv* prefix
pass (the shared prefix once with a key/value cache, then the suffixes on a copy of that cache with
continued positions and a plain 2-D mask, so the model applies its own mask logic).

**The rule.** A packed row is exact only where attention is a plain causal mask over absolute or
rotary positions that the engine controls (``position_ids``), and where the model takes a 4-D mask
as it is. So packing is off for:

* ALiBi (BLOOM, MPT, Falcon with ``alibi=True``, any ``position_embedding_type="alibi"``): the bias
  is built from the row's own coordinates or its 2-D mask;
* models without ``position_ids`` in their forward, and layers that are not attention
  (``layer_types`` other than full/sliding attention: state-space, recurrent, linear attention);
* attention implementations other than ``sdpa`` and ``eager`` (flash kernels take no 4-D mask).

Local attention under any name (``sliding_window``, GPT-Neo's ``window_size``, ``attention_window``,
``sliding_window_size``, ``attention_chunk_size``...) and the position table (``n_positions``,
``max_position_embeddings``, ``max_seq_len``, ``n_ctx``...) cap packed rows: a row never exceeds
the smallest window or the table (some models slice a mask buffer of that size by the row's own
coordinates, GPT-Neo applies its window that way), and a request longer than a window never goes
into a packed row. The kv path needs a ``DynamicCache`` made of attention layers only; ALiBi and
sliding windows are fine there. ``TransformersBackend`` also checks both shortcuts against a plain
forward on a short probe before first use (``warm_up``), so a family this rule does not know
falls back to plain rows instead of giving other numbers.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from .._checks import is_int

#: config attributes that name a local attention window (any layer)
WINDOW_KEYS = ("sliding_window", "window_size", "attention_window", "sliding_window_size", "local_window_size",
               "local_attention_window_len", "attention_chunk_size")
#: config attributes that name the position table / trained context, in order of preference
TABLE_KEYS = ("n_positions", "max_position_embeddings", "max_seq_len", "n_ctx", "max_sequence_length", "seq_length")
#: model types whose attention bias is ALiBi
ALIBI_TYPES = ("bloom", "mpt", "jais")
ATTENTION_LAYERS = {"full_attention", "sliding_attention"}


@dataclass(frozen=True)
class Traits:
    """What the engine may do with one model.

    Attributes:
        pack: packed rows (a 4-D mask over each request's own tokens, its own positions) are exact.
        kv: the kv prefix path may be tried (attention-only layers).
        why: one line saying why (shown in ``EngineStats.rule``).
        window: the smallest local attention window, if any.
        table: the position table / trained context size, if the config declares one.
        cache_arg: the name under which the model's forward takes a cache ("cache" or "past_key_values").
        positions: the model's forward takes ``position_ids``.
    """

    pack: bool
    kv: bool
    why: str
    window: int | None
    table: int | None
    cache_arg: str | None
    positions: bool


def _positive_ints(config: Any, keys: tuple[str, ...]) -> list[int]:
    out = []
    for k in keys:
        v = getattr(config, k, None)
        if isinstance(v, (list, tuple)):  # per-layer windows
            out += [x for x in v if is_int(x) and x > 0]
        elif is_int(v) and v > 0:
            out.append(v)
    return out


def position_table(config: Any) -> int | None:
    """The model's position table / declared context size, or None (e.g. ALiBi models)."""
    found = _positive_ints(config, TABLE_KEYS)
    return min(found) if found else None


def _alibi(config: Any) -> bool:
    return (getattr(config, "model_type", "") in ALIBI_TYPES or bool(getattr(config, "alibi", False))
            or bool(getattr(config, "use_alibi", False))
            or "alibi" in str(getattr(config, "position_embedding_type", "") or ""))


def _layer_kinds(config: Any) -> set[str]:
    kinds = getattr(config, "layer_types", None)
    return set(kinds) if isinstance(kinds, (list, tuple)) else set()


def traits(model: Any) -> Traits:
    """Decide from ``model``'s config and forward signature what the engine may do (see the module docstring)."""
    config = model.config
    windows = _positive_ints(config, WINDOW_KEYS)
    window = min(windows) if windows else None
    table = position_table(config)
    params = inspect.signature(model.base_model.forward).parameters
    cache_arg = next((a for a in ("cache", "past_key_values") if a in params), None)
    other_layers = _layer_kinds(config) - ATTENTION_LAYERS
    impl = getattr(config, "_attn_implementation", None) or "eager"
    kv = cache_arg is not None and not other_layers
    positions = "position_ids" in params
    common = dict(window=window, table=table, cache_arg=cache_arg, positions=positions)
    if other_layers:
        why = f"plain rows only: layers that are not attention ({', '.join(sorted(other_layers))})"
        return Traits(False, False, why, **common)
    if _alibi(config):
        return Traits(False, kv, "no packed rows: ALiBi attention bias", **common)
    if not positions:
        return Traits(False, kv, "no packed rows: the model takes no position_ids", **common)
    if impl not in ("sdpa", "eager"):
        return Traits(False, kv, f"no packed rows: attention implementation {impl!r} takes no 4-D mask", **common)
    caps = [f"window {window}"] if window else []
    caps += [f"position table {table}"] if table else []
    why = "packed rows: causal attention over positions the engine sets" + (f" (rows capped by {', '.join(caps)})"
                                                                             if caps else "")
    return Traits(True, kv, why, **common)
