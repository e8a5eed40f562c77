"""The ratings' metric names: ``rating/NAME/openskill`` now, ``rating/NAME/trueskill`` in runs written before the
ratings moved to openskill; ``arena report`` reads both into one series."""

from __future__ import annotations

from pathlib import Path

from arena.core.eval.run_data import RunData, final_ratings, rating_series
from arena.core.learn.run_config import TrainConfig


def run_with(metrics: list[dict]) -> RunData:
    return RunData(
        run_dir=Path("."),
        config=TrainConfig(arena="kuhn_poker", opponents=[]),
        metrics=metrics,
        population=None,
        evals=[],
    )


def test_old_and_new_rating_names_read_alike() -> None:
    old = run_with([{"iteration": 0, "rating/agent/elo": 1010.0, "rating/agent/trueskill": 2.5}])
    new = run_with([{"iteration": 0, "rating/agent/elo": 1010.0, "rating/agent/openskill": 2.5}])
    assert rating_series(old) == rating_series(new) == {"agent": {"elo": [(1.0, 1010.0)], "openskill": [(1.0, 2.5)]}}
    assert final_ratings(old) == [{"name": "agent", "elo": 1010.0, "conservative": 2.5}]
    # Other systems are not ratings of this project and stay out.
    assert rating_series(run_with([{"iteration": 0, "rating/agent/glicko": 3.0}])) == {}
