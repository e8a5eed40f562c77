"""Fixtures for backend tests: the offline toy model of ``tests/toy_model.py``."""

from __future__ import annotations

import pytest
from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="session")
def tiny_tokenizer() -> PreTrainedTokenizerFast:
    return build_tokenizer()


@pytest.fixture(scope="session")
def tiny_model(tiny_tokenizer: PreTrainedTokenizerFast) -> Qwen2ForCausalLM:
    return build_model(len(tiny_tokenizer), tiny_tokenizer.eos_token_id, tiny_tokenizer.pad_token_id)
