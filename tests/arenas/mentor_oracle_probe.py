"""MENTOR's testbed before training (issue 26): how often rollouts guided by the oracle expert succeed.

    python -m tests.arenas.mentor_oracle_probe model:tiny --size medium --gammas 0,0.5,1.5,3 --layouts 16 --samples 4

Plays ``--layouts`` training layouts of ``text_maze`` × ``--samples`` rollouts with the policy alone (γ 0 in the
list) and guided by ``oracle:text_maze-explorer`` at each fixed γ: at every answer token the hf backend samples
``(1 − w)·p_policy + w·p_oracle`` with ``w = min(1, H_t/γ)`` (MENTOR's mixture; the run's plugin sets γ from the
95th percentile of the previous batch's token entropies, floor 1.5). Prints, per γ: success rate, pass@k over the
layouts, invalid answers and decisions per episode, and the policy's token
entropies (mean and 95th percentile) on the plain rollouts: what γ the plugin would pick.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from arena.core import ActionPlan, Turn, hookimpl
from arena.core.api.backend import Guide, Segment
from arena.core.api.records import TrialSpec
from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig
from arena.core.eval.passk import pass_at_k
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool


class FixedGamma:
    """Every turn guided by the oracle at one fixed γ (the plugin's schedule and α play no part here)."""

    def __init__(self, gamma: float) -> None:
        self.gamma = gamma

    @hookimpl
    def pre_action(self, turn: Turn) -> ActionPlan:
        segment = Segment(temperature=1.0, guide=Guide("oracle:text_maze-explorer", self.gamma))
        return ActionPlan(segments=(segment,), source="probe")


def play(model: str, size: str, gamma: float, layouts: int, samples: int, pool: BackendPool) -> dict[str, Any]:
    specs = [
        TrialSpec(
            trial_id=f"probe-{seed}-{k}",
            arena_id="text_maze",
            seats=(model,),
            seed=seed,
            arena_kwargs={"size": size, "split": "train"},
            training=False,
        )
        for seed in range(layouts)
        for k in range(samples)
    ]
    plugins = PluginSet(["probe"], extra={"probe": FixedGamma(gamma)}) if gamma > 0 else PluginSet([])
    config = TrialConfig(
        episodes=1,
        invalid_action=InvalidActionConfig(policy="random"),
        prompt=PromptConfig(max_new_tokens=24, temperature=1.0),
    )
    trials = RolloutEngine(plugins, config, backends=pool).run(specs)
    wins = np.array([t.final.outcomes["player_0"] == "win" for t in trials]).reshape(layouts, samples)
    steps = [s for t in trials for e in t.episodes for s in e.steps]
    entropies = [h for s in steps if s.completion is not None for h in s.completion.entropies]
    ks = [k for k in (1, 2, 4, 8) if k <= samples]
    return {
        "gamma": gamma,
        "success": float(wins.mean()),
        "pass_at_k": {k: float(np.mean([pass_at_k(samples, int(w.sum()), k) for w in wins])) for k in ks},
        "invalid_per_episode": sum(s.invalid for s in steps) / len(trials),
        "steps_per_episode": len(steps) / len(trials),
        "entropy_mean": float(np.mean(entropies)) if entropies else float("nan"),
        "entropy_p95": float(np.percentile(entropies, 95)) if entropies else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("--size", default="medium")
    parser.add_argument("--gammas", default="0,0.5,1.5,3")
    parser.add_argument("--layouts", type=int, default=16)
    parser.add_argument("--samples", type=int, default=4)
    args = parser.parse_args()
    pool = BackendPool()
    for gamma in [float(g) for g in args.gammas.split(",")]:
        print(json.dumps(play(args.model, args.size, gamma, args.layouts, args.samples, pool)), flush=True)


if __name__ == "__main__":
    main()
