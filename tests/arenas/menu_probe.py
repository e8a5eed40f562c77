"""SGE's menu before training, by hand (docs/results.md, "SGE's menu on tiny v7, before training").

    .venv/bin/python tests/arenas/menu_probe.py [MODEL]

plays 20 menus × 8 answers with each of ``menu_grpo`` and ``menu_sge``'s prompt, plugins and sampling, and prints
from the arena's ``episode_details`` how often the strategy tag was closed (and closed first), a listed plan named
right, its code right, and the most common outcomes.
"""

from __future__ import annotations

import collections
import sys

import attrs

from arena.core.config.loader import load_config
from arena.core.eval.passk import task_specs
from arena.core.host.plugins import PluginSet
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool

MENUS, ANSWERS = 20, 8


def main(model: str) -> None:
    for name in ("menu_grpo", "menu_sge"):
        config = load_config(TrainConfig, name)
        learner = config.learners[0]
        specs = task_specs(model, "menu", config.arena_kwargs, range(MENUS), ANSWERS, learner.options)
        trial = attrs.evolve(config.trial, early_stop_on_win=False, episodes=1)
        engine = RolloutEngine(PluginSet(list(learner.plugins)), trial, backends=BackendPool())
        details = [next(iter(t.episodes[0].details.values())) for t in engine.run(specs)]
        shares = {
            key: round(sum(bool(d.get(key)) for d in details) / len(details), 3)
            for key in ("strategy_closed", "strategy_closed_first", "plan_right", "code_right")
        }
        outcomes = collections.Counter(d.get("outcome_key") for d in details).most_common(5)
        print(f"{name}: {len(details)} answers, {shares}, outcomes {outcomes}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "model:tiny")
