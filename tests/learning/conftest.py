"""Fixtures of the learning tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.toy_model import build_model, build_tokenizer


@pytest.fixture(scope="module")
def toy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The offline toy model and tokenizer saved as a model directory (``model: PATH`` in a config)."""
    path = tmp_path_factory.mktemp("toy") / "model"
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
