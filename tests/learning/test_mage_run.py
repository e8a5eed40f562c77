"""A short MAGE run on Kuhn poker, then `arena eval` against the training pool on fixed seeds: success by episode.

MAGE's claim is that the agent does better in later episodes of a trial than in the first, against the same
opponent from the same deal. On `tiny` it does not: its reflections have the right tags but garbled text, so
later episodes carry no usable information, and the measured success is flat (410 of 900 trials won in episode
1, 406 in episode 3; docs/results.md). The check is kept as a strict expected failure: the day a model or a
change makes episode 3 at least as good as episode 1 here, the test reports XPASS as a failure and the marker
must go.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.core.config import load_config
from arena.core.evaluation import evaluate_run
from arena.core.train import Run
from arena.core.train_config import TrainConfig


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="tiny does not improve from episode 1 to 3 (410 vs 406 of 900 won)")
def test_episode_three_success_is_not_below_episode_one(tmp_path: Path, model_cache: None) -> None:
    overrides = ["iterations=4", "groups=8", "eval.every=0", "eval.games=10", "checkpoint.keep=1"]
    config = load_config(TrainConfig, "kuhn_mage", overrides=overrides)
    run_dir = Run(config, tmp_path / "run", progress=False).run()
    report = evaluate_run(run_dir, opponents="train", games=300, policy_samples=4, progress=False)

    def pooled(episode: int) -> tuple[int, int]:
        rows = [next(e for e in r["by_episode"] if e["episode"] == episode) for r in report["opponents"]]
        return sum(r["win_rate"]["k"] for r in rows), sum(r["win_rate"]["n"] for r in rows)

    (wins_1, n_1), (wins_3, n_3) = pooled(1), pooled(3)
    print(f"episode 1: {wins_1}/{n_1} won, episode 3: {wins_3}/{n_3} won")
    assert n_1 == n_3 == 900
    assert wins_3 >= wins_1
