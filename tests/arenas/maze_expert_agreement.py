"""How far did a policy move toward the expert? Exact agreement with the scripted explorer on held-out mazes.

    python -m tests.arenas.maze_expert_agreement runs/maze_proof --layouts 30      # every run's final checkpoint

On ``--layouts`` held-out `text_maze` layouts of the runs' size the scripted explorer plays each episode to its end;
at each of its decisions the prompt is built as the engine builds it (SAFARI's ``Game.prompt``) and the model's
probability of the explorer's answer ``<action>MOVE</action>`` is read by teacher forcing (temperature 1). Printed
per model: the mean of that probability over all decisions, and its mean log. For MENTOR's testbed (issue 26) this
is what the guided rollouts teach, measured without sampling noise: the starting model, then each run's final
checkpoint; MENTOR − GRPO and MENTOR − its ablation paired by seed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

from arena.arenas.text_maze import TextMazeEnv, explorer_action
from arena.core.backends.hf import HFBackend
from arena.plugins.safari import Game, answer_of
from tests.arenas.doors_proof import fmt
from tests.arenas.safari_chest_probe import answer_logprob


def expert_states(size: str, layouts: int) -> list[tuple[Any, str]]:
    """(prompt messages, the explorer's answer) at every decision of the explorer's episode on each layout."""
    game = Game("text_maze", {"size": size, "split": "test"}, 0, [])
    env = TextMazeEnv(size=size, split="test")
    states = []
    for seed in range(layouts):
        cursor = game.start(env, seed, {})
        while not cursor.done:
            turn = game.turn(cursor, game.view(cursor))
            action = explorer_action(env)
            move = next(m.name for m in turn.legal_moves if m.action == action)
            states.append((game.prompt(turn), answer_of(move)))
            game.apply(cursor, turn, action, {})
    return states


def agreement(model: str, states: list[tuple[Any, str]]) -> dict[str, float]:
    backend = HFBackend(model.removeprefix("model:"))
    logps = [answer_logprob(backend, messages, answer) for messages, answer in states]
    return {"p_expert": float(np.mean(np.exp(logps))), "logp_expert": float(np.mean(logps))}


def final_model(run: Path) -> str:
    latest = sorted((run / "checkpoints").glob("step-*"))[-1]
    return f"model:{latest / 'learners' / 'agent'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--size", default="medium")
    parser.add_argument("--layouts", type=int, default=30)
    parser.add_argument("--start", default="model:tiny")
    args = parser.parse_args()
    states = expert_states(args.size, args.layouts)
    print(f"{len(states)} decisions of the explorer on {args.layouts} held-out {args.size} layouts")
    start = agreement(args.start, states)
    print(json.dumps({"model": args.start, **start}), flush=True)
    values: dict[str, dict[int, dict[str, float]]] = {}
    for run in sorted(args.root.glob("*_s[0-9]*")):
        if not (run / "checkpoints").is_dir():
            continue
        method, seed = run.name.rsplit("_s", 1)
        result = agreement(final_model(run), states)
        values.setdefault(method, {})[int(seed)] = result
        print(json.dumps({"run": run.name, **result}), flush=True)
    for key in ("p_expert", "logp_expert"):
        for method, by_seed in sorted(values.items()):
            line = f"{key} {method}: {fmt([r[key] for _, r in sorted(by_seed.items())])}"
            line += f", change from the start {fmt([r[key] - start[key] for _, r in sorted(by_seed.items())], True)}"
            print(line)
        mentor = values.get("mentor", {})
        for other in ("grpo", "mentor_self"):
            seeds = sorted(set(mentor) & set(values.get(other, {})))
            if seeds:
                diff = [mentor[s][key] - values[other][s][key] for s in seeds]
                print(f"{key} mentor − {other}: {fmt(diff, signed=True)} (seeds {seeds})")


if __name__ == "__main__":
    main()
