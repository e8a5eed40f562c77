"""Proof of learning: GRPO on `tiny` raises the mean return against MAGE's Kuhn pool on fixed evaluation seeds.

A shorter version of `configs/kuhn_grpo.yaml` (same pool, model and estimator). The evaluation before training
and after it use the same seeds and opponents, so the difference is the policy's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.config import load_config
from arena.core.train import Run
from arena.core.train_config import TrainConfig

ITERATIONS = 12


@pytest.mark.slow
def test_grpo_on_tiny_beats_its_starting_point(tmp_path: Path, model_cache: None) -> None:
    config = load_config(
        TrainConfig,
        "kuhn_grpo",
        overrides=[
            f"iterations={ITERATIONS}",
            "eval.every=0",
            "eval.games=300",
            "eval.opponents=[conservative,aggressive,intermediate]",
        ],
    )
    run_dir = Run(config, tmp_path / "run").run()
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    before, after = metrics[0], metrics[-1]
    assert before["iteration"] == -1 and after["iteration"] == ITERATIONS - 1
    gain = after["eval/mean_return"] - before["eval/mean_return"]
    print(f"eval mean return {before['eval/mean_return']:+.3f} -> {after['eval/mean_return']:+.3f}")
    # 900 games with returns in [-2, 2]: a standard error of about 0.05; demand a clear margin.
    assert gain > 0.15, (before, after)
