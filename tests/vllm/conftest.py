"""Fixtures for the vLLM backend tests: a tiny random Qwen2 built on the spot and one shared engine.

These tests run only where vLLM imports (``make test-vllm`` uses ``.venv-vllm``); elsewhere every test here
is skipped with the reason, so the main suite needs no vLLM. The model is built in the test itself rather
than taken from ``arena.core.models`` so the checks depend on nothing but vLLM: head_dim 64 (the CPU attention
backend's minimum), 2 layers, a byte-level BPE tokenizer trained on a few lines, a chat template, fp32.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CORPUS = [
    "<strategy>bluff with the jack, then fold to a raise</strategy> <action>call</action>",
    "the quick brown fox jumps over the lazy dog; kuhn poker, tic-tac-toe, liar's dice",
    "I pick one of the legal moves.\n<action>bet</action> <remark>try something different</remark>",
]


def import_vllm_backend() -> ModuleType:
    """The backend module, or a skip of the calling test module with the reason (no vLLM, wrong version)."""
    try:
        importlib.import_module("vllm")
    except ImportError as error:
        pytest.skip(f"vLLM is not importable here ({error}); run `make test-vllm`", allow_module_level=True)
    from arena.core.api.errors import ArenaError

    try:
        return importlib.import_module("arena.core.backends.vllm_backend")
    except ArenaError as error:
        pytest.skip(str(error), allow_module_level=True)
    raise AssertionError("unreachable")


def tiny_config(vocab_size: int, eos: int, pad: int) -> Any:
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,  # head_dim 64
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=True,
        eos_token_id=eos,
        pad_token_id=pad,
        bos_token_id=None,
    )


def tiny_model(config: Any, seed: int) -> Any:
    """Random weights, larger than the default init so the distributions are far from uniform."""
    from transformers import Qwen2ForCausalLM

    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config).float().eval()
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.3)
    return model


def build_tiny_qwen2(path: Path, seed: int = 0) -> Path:
    """Tokenizer + random model saved to ``path`` as safetensors (tied embedding under its embed name)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(CORPUS * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    config = tiny_config(len(fast), fast.eos_token_id, fast.pad_token_id)
    tiny_model(config, seed).save_pretrained(path, safe_serialization=True)
    return path


@pytest.fixture(scope="session")
def vllm_backend_module() -> ModuleType:
    return import_vllm_backend()


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory, vllm_backend_module: ModuleType) -> Path:
    return build_tiny_qwen2(tmp_path_factory.mktemp("tiny-qwen2") / "model", seed=0)


@pytest.fixture(scope="session")
def hf_model(tiny_dir: Path) -> Any:
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(tiny_dir), dtype=torch.float32).eval()


@pytest.fixture(scope="session")
def backend(vllm_backend_module: ModuleType, tiny_dir: Path) -> Iterator[Any]:
    """One engine for the whole session: fp32 (so HF and vLLM agree closely), a small KV cache, compilation skipped."""
    engine = vllm_backend_module.VLLMBackend(
        str(tiny_dir),
        dtype="float32",
        max_model_len=512,
        seed=0,
        kv_cache_memory_bytes=256 * 1024**2,
        enforce_eager=True,
    )
    yield engine
    engine.close()
