"""The MAGE-on-tiny slow test at another budget, by hand (docs/results.md, "MAGE on tiny at smaller budgets").

    .venv/bin/python -m tests.learning.mage_budget GAMES OVERRIDE...

trains ``kuhn_mage`` with the overrides, plays GAMES three-episode trials per training opponent on the run's
evaluation deals with the trained and the untrained model, and prints the counts the slow test asserts on.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
from pathlib import Path

import attrs

from arena.core.config.loader import load_config
from arena.core.eval.evaluation import kuhn_winnable, open_run, play
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.seats import BackendPool
from tests.learning.test_learning import episode_wins


def main(games: int, overrides: list[str]) -> None:
    started = time.perf_counter()
    config = load_config(TrainConfig, "kuhn_mage", overrides=overrides)
    run_dir = Run(config, Path(tempfile.mkdtemp()) / "run", progress=False).run()
    trained_at = time.perf_counter()
    trained = open_run(run_dir)
    untrained = attrs.evolve(trained, seat_spec="model:tiny@hf", state={})
    opponents = [entry.spec for entry in config.opponents]
    after = play(trained, opponents, games, config.eval.seed, BackendPool(), progress=False)
    before = play(untrained, opponents, games, config.eval.seed, BackendPool(), progress=False)
    first, third = episode_wins(after, trained.seat_spec, 0), episode_wins(after, trained.seat_spec, 2)
    untrained_first = episode_wins(before, untrained.seat_spec, 0)
    ceilings = [kuhn_winnable(after[o], trained.seat_spec, o) for o in opponents]
    discordant = sum(a != b for a, b in zip(first, third, strict=True))
    print(
        f"{' '.join(overrides)}; {games} trials per opponent: episode-1 wins {sum(untrained_first)} untrained -> "
        f"{sum(first)}, episode 3 {sum(third)}, winnable {sum(c['k'] for c in ceilings if c)}, "
        f"discordant episode 1/3 pairs {discordant} (noise bound {2 * math.sqrt(discordant):.1f}); "
        f"training {trained_at - started:.0f} s, trials {time.perf_counter() - trained_at:.0f} s"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
