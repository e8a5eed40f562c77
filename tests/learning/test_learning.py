"""Proof of learning: GRPO on `tiny` raises the mean return against MAGE's Kuhn pool on fixed evaluation seeds.

A shorter version of `configs/kuhn_grpo.yaml` (same pool, model, estimator and learning rate). The evaluations
before and after training play the same deals against the same opponents, so the difference is the policy's.
Measured on 2 CPU cores (docs/training.md): -0.31 before, -0.16 after 20 iterations; the untrained model
plays each legal move about half the time, and training moves it towards the pool's best card-independent
reply (bet and call, -0.12 without invalid answers).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.config import load_config
from arena.core.train import Run
from arena.core.train_config import TrainConfig

ITERATIONS = 20


@pytest.mark.slow
def test_grpo_on_tiny_beats_its_starting_point(tmp_path: Path, model_cache: None) -> None:
    config = load_config(TrainConfig, "kuhn_grpo", overrides=[f"iterations={ITERATIONS}", "eval.every=0"])
    run_dir = Run(config, tmp_path / "run", progress=False).run()
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    before, after = metrics[0], metrics[-1]
    assert before["iteration"] == -1 and after["iteration"] == ITERATIONS - 1
    assert config.eval.games * len(config.eval.opponents) == 900
    gain = after["eval/mean_return"] - before["eval/mean_return"]
    print(f"eval mean return {before['eval/mean_return']:+.3f} -> {after['eval/mean_return']:+.3f}")
    # 900 paired games (same deals before and after) with returns in [-2, 2]: a gain of 0.1 is well beyond noise.
    assert gain > 0.1, (before, after)
