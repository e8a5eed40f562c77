"""A tiny, offline language model for backend tests: an in-process BPE tokenizer and a random Qwen2.

Nothing is downloaded: the tokenizer is trained on a short synthetic corpus with the ``tokenizers`` library and
the model is a seeded, randomly initialised ``Qwen2ForCausalLM`` (2 layers, hidden 128). Its text is gibberish,
which is what the tests want: every code path (stop strings, EOS, length, odd bytes) gets exercised by chance.
"""

from __future__ import annotations

import random

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

_WORDS = (
    "the strategy is to bluff when the card is high and fold when low; <strategy>raise early</strategy> "
    "<action>call</action> <action>fold</action> <remark>try something else</remark> poker tic tac toe "
    "legal moves: 0: left 1: right 2: up 3: down. Café naïve — 東京 🎲 0123456789 {}[]()!?"
)


def _corpus() -> list[str]:
    """Game-ish words plus seeded pseudo-words from syllables, so BPE finds a few hundred merges."""
    rng = random.Random(0)
    syllables = ["ka", "lo", "mi", "ren", "tas", "vu", "ne", "shi", "por", "gle", "dra", "on", "ix", "ul"]
    words = _WORDS.split() + ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(300)]
    return [" ".join(rng.choice(words) for _ in range(12)) for _ in range(600)]


def build_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=256 + len(specials) + 300,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(vocab_size: int, eos_id: int, pad_id: int, seed: int = 0) -> Qwen2ForCausalLM:
    config = Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        initializer_range=0.2,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).float().eval()
    return model
