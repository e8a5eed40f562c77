"""arena-nim: Nim as an arena, and a reflection hook.

Nim: a pile of ``stones``; players alternately take 1, 2 or 3; whoever takes the last stone wins (+1, the other
-1). The env is an ordinary PettingZoo AEC env: nothing in it knows about arena except the plugin hooks below.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core import ChatMessage, EpisodeRecord, ReflectionRequest, TrialSpec, hookimpl

MAX_TAKE = 3


class NimEnv(AECEnv):
    metadata: ClassVar[dict[str, Any]] = {"name": "nim_v0", "render_modes": [], "is_parallelizable": False}

    def __init__(self, stones: int = 10) -> None:
        super().__init__()
        self.initial_stones = stones
        self.possible_agents = ["player_0", "player_1"]
        self.action_spaces = {a: spaces.Discrete(MAX_TAKE) for a in self.possible_agents}  # action k takes k+1
        self.observation_spaces = {
            a: spaces.Dict(
                {
                    "observation": spaces.Box(0, stones, shape=(1,), dtype=np.int64),
                    "action_mask": spaces.Box(0, 1, shape=(MAX_TAKE,), dtype=np.int8),
                }
            )
            for a in self.possible_agents
        }

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self.action_spaces[agent]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        mask = np.array([1 if k + 1 <= self.stones else 0 for k in range(MAX_TAKE)], dtype=np.int8)
        return {"observation": np.array([self.stones], dtype=np.int64), "action_mask": mask}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.agents = self.possible_agents[:]
        self.stones = self.initial_stones
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self.agent_selection = self.agents[0]

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self.stones -= int(action) + 1  # type: ignore[arg-type]
        self.rewards = {a: 0.0 for a in self.agents}
        other = self.agents[1 - self.agents.index(agent)]
        if self.stones <= 0:
            self.rewards[agent], self.rewards[other] = 1.0, -1.0
            self.terminations = {a: True for a in self.agents}
        self.agent_selection = other
        self._accumulate_rewards()


@hookimpl
def register_arenas(register: Any) -> None:
    register("nim", NimEnv, description="Nim: take 1-3 stones, the last stone wins", source="arena-nim")


@hookimpl
def reflect(trial: TrialSpec, episode: EpisodeRecord, agent: str) -> ReflectionRequest | None:
    if trial.arena_id != "nim":
        return None
    result = episode.outcomes[agent]
    prompt = (
        f"You just played Nim as {agent} and the result was a {result}. "
        "Write one lesson for the next game inside <remark>...</remark>."
    )
    return ReflectionRequest(name="nim-lesson", messages=(ChatMessage("user", prompt),), extract_tag="remark")
