"""SGE's menu before training, by hand (docs/results.md, "SGE's menu on tiny v7, before training").

    .venv/bin/python tests/arenas/menu_probe.py [MODEL]

plays 20 menus × 8 answers with each of ``menu_grpo`` and ``menu_sge``'s prompt, plugins and sampling, and with
``menu_sge`` all hot (``mixed_temperature`` off, everything at T 1.2: the ablation that keeps SGE's prompt and heats
the code too), and prints from the arena's ``episode_details`` how often the strategy tag was closed (and closed
first), a listed plan named right, its code right, success per answer, pass@1..8 (``summarize_tasks``) and the most
common outcomes. MODEL is a seat spec (``model:tiny``; a model directory: ``model:runs/menu_smol/model``).
"""

from __future__ import annotations

import collections
import sys

import attrs

from arena.core.config.loader import load_config
from arena.core.eval.passk import summarize_tasks, task_specs
from arena.core.host.plugins import PluginSet
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool

MENUS, ANSWERS = 20, 8
ARMS = {
    "menu_grpo": ("menu_grpo", {}),
    "menu_sge": ("menu_sge", {}),
    "menu_sge all hot": ("menu_sge", {"mixed_temperature": False, "action_temperature": 1.2}),
}


def main(model: str) -> None:
    for name, (config_name, sge) in ARMS.items():
        config = load_config(TrainConfig, config_name)
        learner = config.learners[0]
        options = {k: dict(v) for k, v in learner.options.items()}
        if sge:
            options["sge"] = {**options["sge"], **sge}
        specs = task_specs(model, "menu", config.arena_kwargs, range(MENUS), ANSWERS, options)
        trial = attrs.evolve(config.trial, early_stop_on_win=False, episodes=1)
        engine = RolloutEngine(PluginSet(list(learner.plugins)), trial, backends=BackendPool())
        trials = engine.run(specs)
        details = [next(iter(t.episodes[0].details.values())) for t in trials]
        summary = summarize_tasks(trials, ANSWERS)
        shares = {
            key: round(sum(bool(d.get(key)) for d in details) / len(details), 3)
            for key in ("strategy_closed", "strategy_closed_first", "plan_right", "code_right")
        }
        outcomes = collections.Counter(d.get("outcome_key") for d in details).most_common(5)
        success = round(sum(float(d.get("score", 0)) for d in details) / len(details), 4)
        passk = {k: round(float(v), 4) for k, v in summary["pass_at_k"].items()}
        print(f"{name}: {len(details)} answers, {shares}, success {success}, pass@k {passk}, outcomes {outcomes}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "model:tiny")
