"""The token budget of one automatic batch of in-process forwards (causal or masked): a figure per device type, on
CUDA scaled to the device memory free now and the model's size, halved on an out-of-memory error."""

from __future__ import annotations

from typing import Any

import torch

#: On CUDA the budget follows the free device memory: this share of it, at ``token_bytes`` per token,
#: within these bounds.
CUDA_FREE_SHARE = 0.25
CUDA_BUDGET_BOUNDS = (1024, 1 << 18)


def token_bytes(config: Any) -> int:
    """Activation bytes one token of a batch needs at the peak of a layer (fp32 upper bound): the residual
    stream and attention projections (~8 x hidden), the MLP (~3 x intermediate) and a 256-wide attention row
    per head (packed rows are at most 256 long; the vocabulary projection runs in separate chunks)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    hidden = int(getattr(text, "hidden_size", None) or getattr(text, "n_embd", None) or 1024)
    inner = int(getattr(text, "intermediate_size", None) or getattr(text, "n_inner", None) or 4 * hidden)
    heads = int(getattr(text, "num_attention_heads", None) or getattr(text, "n_head", None) or 16)
    return 4 * (8 * hidden + 3 * inner + 256 * heads)


def scaled_budget(free_bytes: int, per_token: int) -> int:
    """A batch's token budget for ``free_bytes`` of free device memory at ``per_token`` bytes a token."""
    low, high = CUDA_BUDGET_BOUNDS
    return max(low, min(high, int(free_bytes * CUDA_FREE_SHARE) // max(per_token, 1)))


def token_budget(table: dict[str, int], device: torch.device, config: Any) -> int:
    """The automatic token budget of one batch: ``table``'s figure for the device type; on CUDA, scaled to the
    device memory free now (``scaled_budget``), so a large GPU gets large batches and a full one small ones
    (an out-of-memory error still halves it, ``back_off``)."""
    if device.type != "cuda":
        return table.get(device.type, 4096)
    free, _ = torch.cuda.mem_get_info(device)
    return scaled_budget(free, token_bytes(config))


def back_off(budget: int, device: torch.device, *, fixed: bool, floor: int = 0) -> int:
    """Called while handling an out-of-memory error: the halved automatic token budget (CUDA's cache emptied),
    or the error re-raised when nothing can shrink (``fixed``: rows given or a one-row batch; budget < ``floor``)."""
    if fixed or budget < floor:
        raise  # the out-of-memory error being handled (back_off is called inside its except block)
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return budget // 2
