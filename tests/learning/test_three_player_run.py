"""A three-player population run end to end on the toy model: every seat filled, every player rated (issue 27)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from arena.core.api.records import TrialRecord
from arena.core.config.loader import load_config
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig


@pytest.mark.slow
def test_three_player_kuhn_rates_every_seat(tmp_path: Path, toy_dir: Path) -> None:
    """The shipped ``kuhn3_ratings`` config on the toy model: trials seat three players, population.json rates the
    learner and the three pool members with openskill, and in every game of three distinct players the sole
    winner's mu rises."""
    shipped = Path(__file__).parents[2] / "configs" / "kuhn3_ratings.yaml"
    raw = yaml.safe_load(shipped.read_text())
    for learner in raw["learners"]:
        learner.update(model=str(toy_dir), backend="hf", optim={**learner["optim"], "lr": 1.0e-3})
    raw.update(torch_threads=1)
    raw["eval"]["games"] = 3
    path = tmp_path / "kuhn3.yaml"
    path.write_text(yaml.safe_dump(raw))
    config = load_config(TrainConfig, path)
    run = Run(config, tmp_path / "run", progress=False)
    assert run.players == 3

    # Each record's ratings before and after, to check the direction of every update.
    games: list[tuple[TrialRecord, dict[str, float], dict[str, float]]] = []
    record = run.population.record

    def watched(trial: TrialRecord) -> None:
        before = {row["name"]: row["mu"] for row in run.population.ratings.table()}
        record(trial)
        games.append((trial, before, {row["name"]: row["mu"] for row in run.population.ratings.table()}))

    run.population.record = watched  # type: ignore[method-assign]
    out = run.run()

    assert games and all(len(trial.spec.seats) == 3 for trial, _, _ in games)
    three = [g for g in games if len(set(g[0].spec.meta["seat_names"])) == 3]
    assert three, "no trial seated three distinct players"
    for trial, before, after in three:
        names = trial.spec.meta["seat_names"]
        returns = list(trial.final.returns.values())
        best = max(returns)
        winners = [names[i] for i, r in enumerate(returns) if r == best]
        assert set(after) >= set(names)
        if len(winners) == 1:
            assert after[winners[0]] > before.get(winners[0], 25.0), (names, returns, before, after)

    population = json.loads((out / "population.json").read_text())
    rows = {row["name"]: row for row in population["ratings"]}
    players = {"agent", "conservative", "aggressive", "intermediate"}
    assert set(rows) == players
    for name in players:
        row = rows[name]
        assert row["games"] > 0 and row["wins"] + row["draws"] + row["losses"] == row["games"]
        assert 0.0 < row["sigma"] < 25 / 3  # every game made the rating surer
