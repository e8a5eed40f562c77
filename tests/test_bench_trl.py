"""``arena bench train``'s single-turn comparison with TRL's ``GRPOTrainer`` (core/bench/commands.py).

Runs on the offline toy model of ``tests/toy_model.py``: what is checked is that both trainers update on exactly
the same tokens, start from the same loss, report positive timings, and that a missing or broken ``trl`` yields a
message instead of a crash. The numbers themselves are for ``arena bench train`` on an idle machine.
"""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from typing import Any

import pytest

from arena.core.api.samples import Sample
from arena.core.backends.hf import HFBackend
from arena.core.bench import commands as bench
from tests.toy_model import build_model, build_tokenizer

PROMPTS = ("call or fold?", "the strategy is to bluff")
TRL_KEYS = {
    "trl_version",
    "trl_seconds",
    "trl_pass_seconds",
    "trl_tokens_per_s",
    "trl_tokens_per_pass",
    "trl_first_loss",
    "trl_micro_batches",
    "trl_setup",
    "trl_ratio",
    "trl_ratio_paired",
}


@pytest.fixture(scope="module")
def toy() -> tuple[Any, Any, list[Sample], int]:
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    backend = HFBackend(model, tokenizer)
    samples = bench.single_turn_samples(backend, group=2, max_new_tokens=6, prompts=PROMPTS)
    return model, tokenizer, samples, backend.pad_id


def test_single_turn_batch_is_grouped_by_prompt(toy: tuple[Any, Any, list[Sample], int]) -> None:
    _, _, samples, _ = toy
    assert len(samples) == 2 * len(PROMPTS)
    for i, s in enumerate(samples):
        assert s.group_id == f"prompt-{i // 2}"
        assert s.context_ids and s.completion_ids
        assert len(s.behaviour_logprobs) == len(s.completion_ids)
    # Both members of a group share their prompt tokens; different prompts differ.
    assert samples[0].context_ids == samples[1].context_ids
    assert samples[0].context_ids != samples[2].context_ids


@pytest.mark.parametrize("micro_batch_tokens", [16384, 60])
def test_trl_update_sees_the_same_tokens(toy: tuple[Any, Any, list[Sample], int], micro_batch_tokens: int) -> None:
    pytest.importorskip("trl")
    model, tokenizer, samples, pad = toy
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = bench.bench_single_turn(
        model, tokenizer, samples, repeats=2, micro_batch_tokens=micro_batch_tokens, pad_id=pad
    )
    assert "trl" not in result, result.get("trl")
    assert result.keys() >= TRL_KEYS
    tokens = sum(len(s.completion_ids) for s in samples)
    assert result["single_turn_completion_tokens"] == tokens
    assert result["single_turn_tokens_per_pass"] == [tokens, tokens]
    assert result["trl_tokens_per_pass"] == [tokens, tokens]
    assert result["single_turn_update_seconds"] > 0 and result["trl_seconds"] > 0
    assert all(w > 0 for w in result["trl_pass_seconds"] + result["single_turn_pass_seconds"])
    pairs = sorted(t / o for t, o in zip(result["trl_pass_seconds"], result["single_turn_pass_seconds"], strict=True))
    assert result["trl_ratio_paired"] == pytest.approx((pairs[0] + pairs[1]) / 2, rel=1e-2)
    assert result["trl_ratio"] == pytest.approx(result["trl_seconds"] / result["single_turn_update_seconds"], rel=1e-2)
    # Same weights, same tokens, same loss definition: the first (warm-up) losses agree, and they are not 0.
    assert abs(result["single_turn_first_loss"]) > 1e-3
    assert result["trl_first_loss"] == pytest.approx(result["single_turn_first_loss"], abs=1e-4)
    if micro_batch_tokens == 60:  # the budget cuts ours into several micro-batches; TRL accumulates as many
        assert result["single_turn_micro_batches"] > 1
        assert result["trl_micro_batches"] >= result["single_turn_micro_batches"]
        assert len(samples) % result["trl_micro_batches"] == 0
    else:
        assert result["single_turn_micro_batches"] == result["trl_micro_batches"] == 1
    # Each side trained its own copy: the caller's weights are untouched.
    for key, value in model.state_dict().items():
        assert value.equal(before[key]), key


def test_between_steps_runs_after_each_timed_trl_step(toy: tuple[Any, Any, list[Sample], int]) -> None:
    pytest.importorskip("trl")
    model, tokenizer, samples, pad = toy
    calls: list[int] = []
    result = bench.trl_grpo_update(
        copy.deepcopy(model), tokenizer, samples, repeats=2, pad_id=pad, between_steps=lambda: calls.append(len(calls))
    )
    assert calls == [0, 1]  # not after the warm-up step
    assert len(result["trl_pass_seconds"]) == 2


def test_not_installed_gives_the_install_hint(
    toy: tuple[Any, Any, list[Sample], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    model, tokenizer, samples, pad = toy
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any, **kwargs: Any) -> Any:
        return None if name == "trl" else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    result = bench.bench_single_turn(model, tokenizer, samples, repeats=1, pad_id=pad)
    assert result["trl_ratio"] is None
    assert result["trl"] == bench.TRL_HINT and "pip install" in result["trl"]
    assert not (TRL_KEYS - {"trl_ratio"}) & result.keys()
    assert result["single_turn_update_seconds"] > 0  # our side is still measured


def test_trl_api_drift_is_reported_not_raised(
    toy: tuple[Any, Any, list[Sample], int], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("trl")
    from trl import GRPOTrainer

    model, tokenizer, samples, pad = toy
    monkeypatch.delattr(GRPOTrainer, "_generate_and_score_completions")
    result = bench.bench_single_turn(model, tokenizer, samples, repeats=1, pad_id=pad)
    assert result["trl_ratio"] is None
    assert result["trl"].startswith("GRPOTrainer failed under trl ")
    assert "_generate_and_score_completions" in result["trl"]
    assert result["single_turn_update_seconds"] > 0


@pytest.mark.slow
def test_bench_train_reports_both_comparisons(tmp_path: Path) -> None:
    """The whole ``bench_train`` on a saved toy model: Kuhn ratio and the single-turn/TRL keys together."""
    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    model.save_pretrained(tmp_path / "toy")
    tokenizer.save_pretrained(tmp_path / "toy")
    result = bench.bench_train(
        model=str(tmp_path / "toy"), trials=1, repeats=1, group=2, max_new_tokens=8, kuhn_max_new_tokens=16
    )
    assert result["ratio"] > 0 and result["update_seconds"] > 0
    assert result["samples"] > 0 and result["completion_tokens"] > 0
    assert result["single_turn_samples"] == 2 * len(bench.BENCH_PROMPTS)
    if importlib.util.find_spec("trl") is None:
        assert result["trl_ratio"] is None and result["trl"] == bench.TRL_HINT
    else:
        assert result["trl_ratio"] > 0, result.get("trl")
        assert result["trl_tokens_per_pass"] == result["single_turn_tokens_per_pass"]
