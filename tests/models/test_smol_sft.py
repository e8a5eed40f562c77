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


def test_the_build_frame_trains_the_base_and_writes_its_report(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``fine_tune_smollm2`` loads the base SmolLM2 returns (here a small Llama), hands it to ``fit`` and saves what
    ``fit`` left, with a report of the recipe and ``fit``'s entries."""
    import json

    import attrs
    from transformers import LlamaConfig, LlamaForCausalLM

    from arena.core.models import smollm2
    from arena.core.models.smol.sft import fine_tune_smollm2

    tokenizer = build_tokenizer()
    base = tmp_path / "base"
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
    )
    LlamaForCausalLM(config).save_pretrained(base)
    tokenizer.save_pretrained(base)
    monkeypatch.setattr(smollm2, "build_smollm2", lambda: str(base))

    @attrs.frozen
    class Recipe:
        seed: int = 3

    def fit(model, tok):  # type: ignore[no-untyped-def]
        with torch.no_grad():
            model.lm_head.weight.fill_(0.5)
        return {"losses": [1.0], "quality": {"seen": tok.vocab_size}}

    fine_tune_smollm2(tmp_path / "out", "toy-build", 2, Recipe(), fit)
    report = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert report == {
        "name": "toy-build",
        "build_version": 2,
        "base": str(base),
        "recipe": {"seed": 3},
        "losses": [1.0],
        "quality": {"seen": tokenizer.vocab_size},
    }
    saved = LlamaForCausalLM.from_pretrained(tmp_path / "out")
    assert float(saved.lm_head.weight.mean()) == 0.5
