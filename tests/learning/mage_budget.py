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

from arena.core.config.loader import load_config
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from tests.learning.test_learning import episode_counts


def main(games: int, overrides: list[str]) -> None:
    started = time.perf_counter()
    config = load_config(TrainConfig, "kuhn_mage", overrides=overrides)
    run_dir = Run(config, Path(tempfile.mkdtemp()) / "run", progress=False).run()
    trained_at = time.perf_counter()
    counts = episode_counts(config, run_dir, games)
    print(
        f"{' '.join(overrides)}; {games} trials per opponent: episode-1 wins {sum(counts.untrained_first)} "
        f"untrained -> {sum(counts.first)}, episode 3 {sum(counts.third)}, winnable {counts.winnable}, "
        f"discordant episode 1/3 pairs {counts.discordant} (noise bound {2 * math.sqrt(counts.discordant):.1f}); "
        f"training {trained_at - started:.0f} s, trials {time.perf_counter() - trained_at:.0f} s"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2:])
