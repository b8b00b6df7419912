"""Tiny random causal LMs of many transformers families, built from small configs (for the architecture matrix).

Every model has 2 layers, hidden size 32, 4 heads and a position table (where it has one) of
``TABLE`` positions; local attention windows are ``WINDOW`` tokens, smaller than the contexts the
matrix scores, so a plan that ignores a window gives visibly wrong numbers.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import transformers as tf

TABLE = 256
WINDOW = 16
_IDS = {"bos_token_id": 0, "eos_token_id": 1, "pad_token_id": 2}
_LLAMA_LIKE = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=TABLE)


def _cfg(name: str, **kwargs: Any) -> Callable[[int], Any]:
    return lambda vocab: getattr(tf, name)(vocab_size=vocab, **_IDS, **kwargs)


#: family -> (config builder taking the vocabulary size, model class name, what the family exercises)
FAMILIES: dict[str, tuple[Callable[[int], Any], str, str]] = {
    "gpt2": (_cfg("GPT2Config", n_embd=32, n_layer=2, n_head=4, n_positions=TABLE), "GPT2LMHeadModel",
             "learned absolute positions"),
    "gpt_neo": (_cfg("GPTNeoConfig", hidden_size=32, num_layers=2, num_heads=4, max_position_embeddings=TABLE,
                     attention_types=[[["global", "local"], 1]], window_size=WINDOW),
                "GPTNeoForCausalLM", "local attention named window_size, own mask buffer"),
    "gptj": (_cfg("GPTJConfig", n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=TABLE),
             "GPTJForCausalLM", "partial rotary, position buffer"),
    "opt": (_cfg("OPTConfig", hidden_size=32, num_hidden_layers=2, ffn_dim=64, num_attention_heads=4,
                 word_embed_proj_dim=32, max_position_embeddings=TABLE), "OPTForCausalLM",
            "learned positions with an offset of 2"),
    "bloom": (_cfg("BloomConfig", hidden_size=32, n_layer=2, n_head=4), "BloomForCausalLM", "ALiBi"),
    "falcon_alibi": (_cfg("FalconConfig", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True),
                     "FalconForCausalLM", "ALiBi (alibi=True)"),
    "falcon_rope": (_cfg("FalconConfig", hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=False,
                         max_position_embeddings=TABLE), "FalconForCausalLM", "rotary"),
    "llama": (_cfg("LlamaConfig", **_LLAMA_LIKE), "LlamaForCausalLM", "rotary, grouped-query attention"),
    "mistral": (_cfg("MistralConfig", **_LLAMA_LIKE, sliding_window=WINDOW), "MistralForCausalLM",
                "sliding window on every layer"),
    "qwen2": (_cfg("Qwen2Config", **_LLAMA_LIKE, use_sliding_window=True, sliding_window=WINDOW,
                   max_window_layers=1), "Qwen2ForCausalLM", "use_sliding_window, layer_types"),
    "gemma2": (_cfg("Gemma2Config", **_LLAMA_LIKE, head_dim=8, sliding_window=WINDOW), "Gemma2ForCausalLM",
               "alternating sliding layers, soft-capping"),
    "gemma3": (_cfg("Gemma3TextConfig", **_LLAMA_LIKE, head_dim=8, sliding_window=WINDOW,
                    layer_types=["sliding_attention", "full_attention"], final_logit_softcapping=30.0),
               "Gemma3ForCausalLM", "sliding layers, final soft-capping"),
    "phi": (_cfg("PhiConfig", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 max_position_embeddings=TABLE), "PhiForCausalLM", "partial rotary"),
    "stablelm": (_cfg("StableLmConfig", **_LLAMA_LIKE), "StableLmForCausalLM", "partial rotary"),
    "gpt_neox": (_cfg("GPTNeoXConfig", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, max_position_embeddings=TABLE), "GPTNeoXForCausalLM", "rotary_pct"),
    "mpt": (_cfg("MptConfig", d_model=32, n_heads=4, n_layers=2, max_seq_len=TABLE), "MptForCausalLM", "ALiBi"),
    "gpt_bigcode": (_cfg("GPTBigCodeConfig", n_embd=32, n_layer=2, n_head=4, n_positions=TABLE),
                    "GPTBigCodeForCausalLM", "learned positions, multi-query"),
    "codegen": (_cfg("CodeGenConfig", n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_positions=TABLE, n_ctx=TABLE),
                "CodeGenForCausalLM", "rotary, position buffer"),
    "phi3": (_cfg("Phi3Config", **_LLAMA_LIKE, sliding_window=WINDOW), "Phi3ForCausalLM", "sliding window"),
    "qwen3": (_cfg("Qwen3Config", **_LLAMA_LIKE, head_dim=8), "Qwen3ForCausalLM", "q/k norm"),
    "starcoder2": (_cfg("Starcoder2Config", **_LLAMA_LIKE, sliding_window=WINDOW), "Starcoder2ForCausalLM",
                   "sliding window"),
    "cohere2": (_cfg("Cohere2Config", **_LLAMA_LIKE, sliding_window=WINDOW,
                     layer_types=["sliding_attention", "full_attention"]), "Cohere2ForCausalLM",
                "sliding layers"),
    "mamba": (_cfg("MambaConfig", hidden_size=32, state_size=4, num_hidden_layers=2, expand=2),
              "MambaForCausalLM", "no attention (state-space)"),
}


def build(family: str, vocab: int, seed: int = 0) -> torch.nn.Module:
    """A tiny random model of ``family`` (seeded), in eval mode."""
    make, cls, _ = FAMILIES[family]
    torch.manual_seed(seed)
    return getattr(tf, cls)(make(vocab)).eval()
