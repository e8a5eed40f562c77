"""MAGE on hidden-type rock-paper-scissors (issue 24): adaptation that reaches an opponent it never met.

Trials of 3 one-round episodes against an opponent that always plays one move; training pool always-rock and
always-paper, unseen always-scissors (configs/rps_types_mage.yaml, docs/testbeds.md). A fixed policy (one that
ignores earlier episodes) wins nothing against always-scissors with the pool's best moves (the ceiling
``fixed_high`` is 0); "counter what you saw" wins from episode 2 on. The same budget without memory
(configs/rps_types_grpo.yaml) can only learn a fixed policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.arenas.ceilings import ceilings
from arena.core.config.loader import load_config
from arena.core.eval.evaluation import open_run, play
from arena.core.eval.stats import wilson
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.seats import BackendPool
from tests.learning.test_learning import episode_wins

#: A short budget: 6 of the configs' 10 iterations (the pool's adaptive ceiling was reached by about the 6th).
OVERRIDES = ["iterations=6", "eval.every=0", "checkpoint.every=6"]
UNSEEN = "rps-scissors"
GAMES = 60  # evaluation trials against the unseen opponent, half in each seat


def unseen_win_rate_by_episode(config_name: str, tmp_path: Path) -> list[float]:
    config = load_config(TrainConfig, config_name, overrides=OVERRIDES)
    assert list(config.unseen) == [UNSEEN]
    run_dir = Run(config, tmp_path / config_name, progress=False).run()
    info = open_run(run_dir)
    trials = play(info, [UNSEEN], GAMES, config.eval.seed, BackendPool(), progress=False)
    return [wilson(sum(w), len(w)).rate for w in (episode_wins(trials, info.seat_spec, k) for k in range(3))]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_mage_adapts_to_the_unseen_type_and_no_memory_cannot(tmp_path: Path, model_cache: None) -> None:
    """Measured (2026-12-05, tiny v8, seed 0): at this test's 6 iterations MAGE 0.12 / 0.98 / 0.95 against
    always-scissors by episode and GRPO without memory 0 / 0 / 0; at the configs' 10 iterations, over 3 seeds,
    0.00 / 0.99 / 1.00 (docs/results.md). The bars: episodes 2 and 3 at least 0.8 above the fixed-policy ceiling
    (60 trials: a Wilson interval of about ±0.06 near 0.95), and no memory at most 0.15 above it in any episode.
    A model that adapts in one seat only wins about half of these trials (half are played in each seat): on this
    machine's v7 build, which recalled nothing in seat 0, MAGE measured 0.00 / 0.50 / 0.45 here: the old bar of 0.5
    sat right at that failure (docs/models.md, v8)."""
    table = ceilings("rock_paper_scissors", {"rounds": 1}, ["rps-rock", "rps-paper"], unseen=[UNSEEN])
    fixed = table["per_opponent"][UNSEEN]["fixed_high"]
    assert fixed == 0.0
    mage = unseen_win_rate_by_episode("rps_types_mage", tmp_path)
    no_memory = unseen_win_rate_by_episode("rps_types_grpo", tmp_path)
    print(f"against the unseen {UNSEEN}, win rate by episode: MAGE {mage}, GRPO without memory {no_memory}")
    assert mage[2] >= fixed + 0.8 and mage[1] >= fixed + 0.8, mage
    assert max(no_memory) <= fixed + 0.15, no_memory
