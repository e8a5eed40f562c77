"""Smoke test: each shipped SGE config runs one iteration on ``tiny`` (budgets cut, everything else as shipped).

``coding_sge`` and ``menu_sge`` train SmolLM2 models; here their learner is ``tiny`` (which writes no Python: the
point is that the run goes end to end: strategy prompt, two-temperature sampling, buffers, update, checkpoint).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.config.loader import load_config
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig

SMALL = ["iterations=1", "groups=1", "group_size=2", "eval.games=2", "trial.prompt.max_new_tokens=40"]
OVERRIDES = {
    "kuhn_sge_empo2_mage": [
        *SMALL,
        "learners.0.options.sge.strategy_max_tokens=12",
        "learners.0.options.mage.max_new_tokens=24",
        "learners.1.options.mage.max_new_tokens=24",
        "learners.1.options.empo2.tip_max_new_tokens=12",
        "eval.opponents=[conservative]",
    ],
    "coding_sge": [
        *SMALL,
        "learners.0.model=tiny",
        "learners.0.options.sge.strategy_max_tokens=12",
        "learners.0.options.overlong.cache=8",
        "dynamic_sampling.max_rounds=1",
        "eval.arena_kwargs.split=test",
    ],
    "menu_sge": [
        *SMALL,
        "learners.0.model=tiny",
        "learners.0.options.sge.strategy_max_tokens=12",
        "dynamic_sampling.max_rounds=1",
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(OVERRIDES))
def test_shipped_sge_config_runs_one_iteration_on_tiny(
    name: str, tmp_path: Path, model_cache: None, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config(TrainConfig, name, OVERRIDES[name])
    assert all(learner.model == "tiny" for learner in config.learners)
    out = Run(config, tmp_path / "run", progress=False).run()
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    iterations = [line["iteration"] for line in lines]
    assert iterations[0] == -1 and 0 in iterations  # the start evaluation, then the one iteration
    assert list((out / "checkpoints").glob("step-00000001"))
    captured = capsys.readouterr()
    assert "task_pool is 0" not in captured.out + captured.err  # the shipped configs' tasks recur
