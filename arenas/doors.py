"""Doors: a one-action, one-seat arena where the best first episode of a trial spends itself on information.

``doors`` closed doors (numbered 1..N) hide one prize; the trial seed fixes which door (``reset(seed=s)`` gives
the same door every time, so every episode of a trial hides it behind the same door). Each episode is a single
action:

* ``scout`` (action 0): scores 0; the episode summary names the prize's door (``door #k``: the only place a ``#``
  appears, so a model can mark the fact, as ``tiny-doors`` does; ``arena.core.models.tiny.doors_reader``);
* ``open door k`` (action k, 1 <= k <= N): scores 1 if the prize is behind door k, else 0; the summary says only
  that the prize is not behind door k.

A win is a score of 1 (``arena_outcome``; the engine's default for a single seat, a positive return, says the same).
The observation says nothing secret: how many doors there are and that no action was taken yet.

Why it exists (issue 24, item 2): a policy that does not use earlier episodes opens the right door 1/N of the time
in every episode; one that scouts in episode 1 and opens the scouted door after wins every later episode. Scouting
only pays *across* episodes, so a learner crediting each episode on its own return (per-episode GRPO) is pushed
away from it, while MAGE's cross-episode returns (γ_traj = 0.6) push towards it once there are enough doors.
``arena.arenas.doors_credit`` computes the expected episode-1 advantage of scouting over guessing exactly, from
MAGE's and GRPO's own advantage functions, for groups of 8 three-episode trials in which later episodes open the
door once it is known. From the uniform start (each of the N + 1 moves 1/(N + 1)), with 10 doors: +0.216 for MAGE
(γ_traj 0.6), −0.156 for mean-only per-episode GRPO (−0.308 with std normalisation); with 4 doors MAGE's is
−0.159 and with ``gamma_traj: 0`` −0.254. MAGE's turns positive between 5 and 6 doors (docs/testbeds.md has the
table), so the default is ``doors = 10``: a clear margin for MAGE, a clearly negative one for GRPO.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.arenas.one_decision import FoundIsWin, env_of
from arena.core.api.arena import Move, SeatView

__all__ = ["DEFAULT_DOORS", "SCOUT", "DoorsAdapter", "DoorsEnv", "prize_door"]

DEFAULT_DOORS = 10
SCOUT = 0


def prize_door(seed: int, doors: int) -> int:
    """The prize's door (1..doors) for a trial seed: uniform over the doors as the seed varies."""
    return int(np.random.default_rng([int(seed) % (1 << 63), doors]).integers(doors)) + 1


class DoorsEnv(FoundIsWin, AECEnv[str, dict[str, np.ndarray], int | None]):
    """The doors as a one-agent PettingZoo AEC env (agent ``player_0``), one action per episode.

    Observation: ``{"observation": int64 [doors, actions taken], "action_mask": int8 over the N + 1 actions}``
    (every action is legal; the mask is also in ``infos[agent]["action_mask"]``). Actions: 0 = scout, k = open
    door k. ``reset(seed=None)`` draws the next seed from the env's own generator.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "arena_doors_v0", "is_parallelizable": False}

    def __init__(self, doors: int = DEFAULT_DOORS) -> None:
        super().__init__()
        if int(doors) < 2:
            raise ValueError(f"doors must be at least 2, got {doors}")
        self.doors = int(doors)
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        self.render_mode = None
        n = self.doors + 1
        self._observation_spaces = {
            "player_0": spaces.Dict(
                {
                    "observation": spaces.Box(low=0, high=np.array([self.doors, 1]), dtype=np.int64),
                    "action_mask": spaces.Box(low=0, high=1, shape=(n,), dtype=np.int8),
                }
            )
        }
        self._action_spaces = {"player_0": spaces.Discrete(n)}
        self._seed_rng = np.random.default_rng()
        self.prize = 1
        #: The action taken this episode (None before it).
        self.taken: int | None = None
        self.agent_selection = "player_0"
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.arena_text_adapter = DoorsAdapter()

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def action_mask(self) -> np.ndarray:
        return np.ones(self.doors + 1, dtype=np.int8)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        taken = 0 if self.taken is None else 1
        return {"observation": np.array([self.doors, taken], dtype=np.int64), "action_mask": self.action_mask()}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._seed_rng = np.random.default_rng(int(seed) % (1 << 63))
        else:
            seed = int(self._seed_rng.integers(1 << 62))
        self.prize = prize_door(seed, self.doors)
        self.taken = None
        self.agents = self.possible_agents[:]
        self.agent_selection = "player_0"
        self.rewards = {"player_0": 0.0}
        self._cumulative_rewards = {"player_0": 0.0}
        self.terminations = {"player_0": False}
        self.truncations = {"player_0": False}
        self.infos = {"player_0": {"action_mask": self.action_mask()}}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None or not 0 <= int(action) <= self.doors:
            raise ValueError(f"action must be an int in [0, {self.doors}], got {action!r}")
        self._cumulative_rewards[agent] = 0.0
        self.taken = int(action)
        self.rewards = {agent: 1.0 if self.found else 0.0}
        self.terminations = {agent: True}
        self.truncations = {agent: False}
        self.infos = {agent: {"action_mask": self.action_mask()}}
        self._accumulate_rewards()

    @property
    def found(self) -> bool:
        return self.taken is not None and self.taken != SCOUT and self.taken == self.prize


def _doors(view: SeatView) -> DoorsEnv:
    return env_of(view, DoorsEnv)


class DoorsAdapter:
    """Rules, a secret-free observation, the moves ``scout`` / ``open door k`` and what an episode revealed."""

    def rules(self, view: SeatView) -> str:
        n = _doors(view).doors
        return (
            f"There are {n} closed doors, numbered 1 to {n}. A prize is behind exactly one of them, and it stays "
            "behind the same door in every episode of this trial. Each episode you take one action: 'scout' scores "
            "0 but shows you which door hides the prize; 'open door K' scores 1 if the prize is behind door K and 0 "
            "otherwise, and then you only learn that it is not behind door K. Only the prize scores."
        )

    def observation(self, view: SeatView) -> str:
        n = _doors(view).doors
        return f"{n} doors, all closed. Choose one action: scout, or open one door."

    def legal_moves(self, view: SeatView) -> list[Move]:
        n = _doors(view).doors
        return [
            Move(SCOUT, "scout", ("look", "peek")),
            *(Move(k, f"open door {k}", (f"door {k}",)) for k in range(1, n + 1)),
        ]

    def action_name(self, view: SeatView, action: int) -> str:
        if action == SCOUT:
            return "scout"
        return f"open door {action}" if 1 <= action <= _doors(view).doors else f"action {action}"

    def episode_summary(self, view: SeatView) -> str:
        env = _doors(view)
        if env.taken is None:
            return "No action was taken."
        if env.taken == SCOUT:
            return f"You scouted (score 0): the prize is behind door #{env.prize}."
        if env.found:
            return f"You opened door {env.taken} and found the prize (score 1): it is behind door #{env.prize}."
        return f"You opened door {env.taken}: no prize (score 0). The prize is not behind door {env.taken}."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = _doors(view)
        key = "none" if env.taken is None else "scout" if env.taken == SCOUT else "hit" if env.found else "miss"
        return {"score": 1.0 if env.found else 0.0, "scouted": env.taken == SCOUT, "outcome_key": key}
