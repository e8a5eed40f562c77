"""The SFT loop the SmolLM2 builds share (core/models/smol/sft.py), on the toy model: it learns rows of unequal
lengths (padded), follows one seeded stream, leaves the model in eval mode, and saves beside the base's tokenizer
files."""

from __future__ import annotations

import random
from pathlib import Path

import torch

from arena.core.models.smol.sft import Row, save_model, sft_steps
from tests.toy_model import build_model, build_tokenizer


def _setup() -> tuple[torch.nn.Module, object, Row]:
    tokenizer = build_tokenizer()
    model = build_model(tokenizer.vocab_size, tokenizer.eos_token_id, tokenizer.pad_token_id)
    ids = tokenizer("the cat sat on the mat", add_special_tokens=False)["input_ids"]
    # The first two tokens are the "prompt": no loss there.
    return model, tokenizer, (ids, [-100, -100, *ids[2:]])


def _nll(model: torch.nn.Module, row: Row) -> float:
    with torch.no_grad():
        return float(model(input_ids=torch.tensor([row[0]]), labels=torch.tensor([row[1]])).loss)


def test_the_loop_learns_its_rows_from_one_seeded_stream() -> None:
    model, tokenizer, row = _setup()
    before = _nll(model, row)
    draws: list[int] = []

    def draw(rng: random.Random) -> list[Row]:
        draws.append(rng.randrange(1000))
        return [row, (row[0][:3], row[1][:3])]  # rows of two lengths: the batch is padded

    losses = sft_steps(model, tokenizer, draw, steps=30, lr=3e-3, seed=7, name="toy")
    assert len(losses) == 30 and losses[-1] < losses[0]
    assert _nll(model, row) < 0.5 * before
    assert not model.training
    stream = random.Random(7)
    assert draws == [stream.randrange(1000) for _ in range(30)]


def test_save_keeps_the_base_tokenizer_files(tmp_path: Path) -> None:
    model, tokenizer, _ = _setup()
    base = tmp_path / "base"
    base.mkdir()
    (base / "chat_template.jinja").write_text("{{ messages }}")
    save_model(model, tokenizer, base, tmp_path / "out")
    assert (tmp_path / "out" / "chat_template.jinja").read_text() == "{{ messages }}"
    assert (tmp_path / "out" / "config.json").is_file()
