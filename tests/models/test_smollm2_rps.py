"""``smollm2-rps`` (core/models/smol/rps.py): the prompts it learns from, what its SFT rows teach, and the exact
measurement, checked against the model's own likelihood. The build itself (a few minutes) is measured in
docs/results.md, not here."""

from __future__ import annotations

import random

import pytest

from arena.core.api.errors import ArenaError
from arena.core.models import smollm2
from arena.core.models.smol.rps import (
    CONFIGS,
    MOVES,
    TRAIN_TYPES,
    TYPES,
    RpsPrompt,
    RpsRecipe,
    answer,
    build_smollm2_rps,
    collect_rps_prompts,
    encode,
    measure,
    move_probabilities,
    sft,
    smollm2_rps_info,
)


@pytest.fixture(scope="module")
def prompts() -> list[RpsPrompt]:
    return collect_rps_prompts(range(2))


def test_the_collection_meets_only_the_training_pool_in_both_seats_and_every_episode(prompts: list[RpsPrompt]) -> None:
    assert {p.opponent for p in prompts} == set(TRAIN_TYPES) and "rps-scissors" not in TRAIN_TYPES
    cells = {(p.config, p.opponent, p.episode, p.seat) for p in prompts}
    assert len(cells) == len(CONFIGS) * 2 * 3 * 2 and len(prompts) == len(cells) * 2  # 2 seeds each
    for p in prompts:
        text = p.messages[-1].content
        assert f"You are Player {p.seat}." in text and "<action>MOVE</action>" in text
        shown = "Earlier episodes of this trial:" in text
        # MAGE's history_only memory shows the earlier episodes' moves; the no-memory baseline shows none.
        assert shown == (p.config == CONFIGS[0] and p.episode > 1)
        if shown:
            assert f"player_{1 - p.seat}: {p.opponent.removeprefix('rps-')}" in text


def test_the_winning_move_beats_the_type() -> None:
    winning = {t: RpsPrompt("c", t, 1, 0, ()).winning_move for t in TYPES}
    assert winning == {"rps-rock": "paper", "rps-paper": "scissors", "rps-scissors": "rock"}


def test_a_row_learns_only_the_answer_and_its_end(tokenizer, prompts: list[RpsPrompt]) -> None:  # type: ignore[no-untyped-def]
    ids, labels = encode(tokenizer, prompts[-1], "scissors")
    learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != -100])
    assert learned == answer("scissors") + tokenizer.eos_token
    assert tokenizer.decode(ids).endswith(learned)


def test_the_sft_draws_every_move_whatever_the_memory_shows(  # type: ignore[no-untyped-def]
    tokenizer, prompts: list[RpsPrompt], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The choice is taught uniform and blind to the memory: the moves of the rows the SFT's batches hold."""
    from arena.core.models.smol import rps

    drawn: list[str] = []

    def record(model, tokenizer_, draw, steps, lr, seed, name):  # type: ignore[no-untyped-def]
        rng = random.Random(seed)
        for _ in range(steps):
            for _ids, labels in draw(rng):
                text = tokenizer_.decode([t for t in labels if t != -100])
                drawn.append(next(m for m in MOVES if answer(m) in text))
        return []

    monkeypatch.setattr(rps, "sft_steps", record)
    sft(None, tokenizer, [p for p in prompts if p.episode > 1], RpsRecipe(steps=30, batch=4))
    counts = {m: drawn.count(m) for m in MOVES}
    assert sum(counts.values()) == 120 and min(counts.values()) > 20, counts


def test_move_probabilities_are_the_models_likelihood(tokenizer, prompts: list[RpsPrompt]) -> None:  # type: ignore[no-untyped-def]
    import math

    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4
    )
    model = LlamaForCausalLM(config).eval()
    prompt = prompts[0]
    p = move_probabilities(model, tokenizer, prompt)
    ids, labels = encode(tokenizer, prompt, "paper")
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
    answered = sum(label != -100 for label in labels)
    assert math.log(p["paper"]) == pytest.approx(-float(out.loss) * answered, rel=1e-4)
    result = measure(model, tokenizer, [q for q in prompts if q.seat == 0][:6])
    for by_type in result.values():
        for by_episode in by_type.values():
            for cell in by_episode.values():
                assert 0.0 <= cell["form"] <= 1.0 and 0.0 <= cell["win"] <= cell["form"]
                assert sum(cell["move_share"].values()) == pytest.approx(1.0, abs=1e-3)


def test_only_the_default_recipe_fills_the_cache_and_info_builds_nothing(model_cache: None) -> None:
    with pytest.raises(ArenaError, match="only the default recipe"):
        build_smollm2_rps(recipe=RpsRecipe(steps=1))
    info = smollm2_rps_info()
    assert info["base"] == smollm2.NAME and "path" in info


def test_mages_length_penalty_spares_every_moves_answer(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """MAGE penalises answers longer than half its L_max. At L_max 12 every move's answer paid it, and scissors (the
    longest) more than rock and paper: 1.0 against 0.67, a third of a win against the move that beats paper
    (docs/results.md, "Hidden types with SmolLM2-135M-Instruct, trained"). The config's L_max must leave all three
    unpenalised."""
    from arena.core.config.loader import load_config
    from arena.core.learn.run_config import TrainConfig
    from arena.plugins import mage

    config = load_config(TrainConfig, CONFIGS[0])
    opts = mage.settings(config.learners[0].options)
    lengths = {m: len(tokenizer(answer(m), add_special_tokens=False)["input_ids"]) + 1 for m in MOVES}  # + end token
    assert {
        m: mage.length_penalty(n, opts.max_new_tokens, opts.length_coef) for m, n in lengths.items()
    } == dict.fromkeys(MOVES, 0.0), lengths
    assert (
        mage.length_penalty(lengths["scissors"], 12, opts.length_coef)
        > mage.length_penalty(lengths["paper"], 12, opts.length_coef)
        > 0
    )  # what L_max 12 did
