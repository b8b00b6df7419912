"""Tiny in-memory causal and masked models with real tokenizers (for unit tests)."""

from __future__ import annotations

import torch

CORPUS = [
    "The man took a bath in the bathtub. He washed his hair with shampoo and soap.",
    "The woman went to the store because she needed milk, eggs and bread!",
    "A cat sat on the mat; the dog barked at the mailman at noon.",
    "Café naïve résumé — emoji 🙂 and numbers 1234 567.",
    "Question: what is the answer? the answer is: yes or no. Answer: A B C D",
    "\n\nNew lines\tand tabs, punctuation!!! ?? ... (brackets) [square] {curly}",
]


def tiny_causal() -> tuple:
    """A 2-layer random GPT-2 (seed 0) and a byte-level BPE tokenizer trained on CORPUS."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS * 5, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>")
    eos = fast.convert_tokens_to_ids("<|endoftext|>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(fast), n_positions=64, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=eos, eos_token_id=eos, pad_token_id=eos)
    return GPT2LMHeadModel(config).eval(), fast


def tiny_masked() -> tuple:
    """A 2-layer random BERT (seed 0) and a WordPiece tokenizer trained on CORPUS."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertForMaskedLM, PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(CORPUS * 5, trainers.WordPieceTrainer(vocab_size=200, special_tokens=specials,
                                                                   show_progress=False))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
                                                       special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64, pad_token_id=fast.pad_token_id)
    return BertForMaskedLM(config).eval(), fast
