"""Iterated rock-paper-scissors as a PettingZoo ParallelEnv: the smallest simultaneous-move arena.

It exists to exercise the Parallel code path and opponent modelling (a model can exploit a biased opponent only
by reading the history), so the observation is the whole history, from the observer's side.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from arena.core.api.arena import Move, SeatView

__all__ = ["MOVES", "RockPaperScissorsAdapter", "RockPaperScissorsEnv"]

MOVES = ("rock", "paper", "scissors")
NOT_PLAYED = -1  # history cells of a round not played yet (the RPS contract of arena.arenas.opponents.simple)


def round_reward(mine: int, theirs: int) -> int:
    """+1 if ``mine`` beats ``theirs``, -1 if it loses, 0 on a tie (paper beats rock, scissors paper, rock scissors)."""
    return [0, -1, 1][(theirs - mine) % 3]


class RockPaperScissorsEnv(ParallelEnv[str, np.ndarray, int]):
    """``rounds`` rounds of rock-paper-scissors; reward +1/-1/0 per round; no randomness at all.

    Observation of an agent: an int array of shape ``(rounds, 2)``; row ``t`` is ``[own move, opponent move]`` of
    round ``t`` as indices into ``MOVES`` (``-1`` = not played yet). This is the contract the RPS opponents read.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": [],
        "name": "arena_rock_paper_scissors_v0",
        "is_parallelizable": True,
    }

    def __init__(self, rounds: int = 5) -> None:
        if rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {rounds}")
        self.rounds = int(rounds)
        self.possible_agents = ["player_0", "player_1"]
        self.agents: list[str] = []
        self.history: list[tuple[int, int]] = []
        self.render_mode = None
        # One space object per agent for the env's lifetime: the API tests (and space seeding) rely on identity.
        self._observation_spaces = {
            a: spaces.Box(low=NOT_PLAYED, high=len(MOVES) - 1, shape=(self.rounds, 2), dtype=np.int64)
            for a in self.possible_agents
        }
        self._action_spaces = {a: spaces.Discrete(len(MOVES)) for a in self.possible_agents}
        self.arena_text_adapter = RockPaperScissorsAdapter()

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def _observe(self, seat: int) -> np.ndarray:
        obs = np.full((self.rounds, 2), NOT_PLAYED, dtype=np.int64)
        for t, moves in enumerate(self.history):
            obs[t] = (moves[seat], moves[1 - seat])
        return obs

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, Any]]]:
        self.agents = self.possible_agents[:]
        self.history = []
        observations = {a: self._observe(i) for i, a in enumerate(self.possible_agents)}
        return observations, {a: {} for a in self.agents}

    def step(
        self, actions: dict[str, int]
    ) -> tuple[
        dict[str, np.ndarray],
        dict[str, float],
        dict[str, bool],
        dict[str, bool],
        dict[str, dict[str, Any]],
    ]:
        if not self.agents:
            raise RuntimeError("step() called on a finished episode; call reset() first")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise ValueError(f"missing actions for {missing}")
        a0, a1 = (int(actions[a]) for a in self.possible_agents)
        for a in (a0, a1):
            if not 0 <= a < len(MOVES):
                raise ValueError(f"invalid action {a}; expected 0 (rock), 1 (paper) or 2 (scissors)")
        self.history.append((a0, a1))
        r0 = float(round_reward(a0, a1))
        rewards = {"player_0": r0, "player_1": -r0}
        done = len(self.history) >= self.rounds
        observations = {a: self._observe(i) for i, a in enumerate(self.possible_agents)}
        terminations = {a: done for a in self.agents}
        truncations = {a: False for a in self.agents}
        infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None


def _history_of(view: SeatView) -> list[tuple[int, int]]:
    """(own, opponent) moves per round played, from the observation so it works for any holder of the view."""
    obs = np.asarray(view.observation)
    if obs.ndim == 2 and obs.shape[1] == 2:
        return [(int(a), int(b)) for a, b in obs if a != NOT_PLAYED and b != NOT_PLAYED]
    env = view.env.unwrapped if hasattr(view.env, "unwrapped") else view.env
    return [(m[view.seat], m[1 - view.seat]) for m in getattr(env, "history", [])]


class RockPaperScissorsAdapter:
    """Text for iterated RPS: the rounds so far in words, the running score, moves rock/paper/scissors."""

    @staticmethod
    def _rounds(view: SeatView) -> int:
        env = getattr(view.env, "unwrapped", view.env)
        return int(getattr(env, "rounds", len(_history_of(view))))

    def rules(self, view: SeatView) -> str:
        return (
            f"Iterated rock-paper-scissors over {self._rounds(view)} rounds against one opponent; both choose at the "
            "same time. Rock beats scissors, scissors beats paper, paper beats rock. Each round you win scores +1, "
            "each round you lose -1, a tie 0. The opponent may have habits: use the history.\n"
            f"You are Player {view.seat}."
        )

    def observation(self, view: SeatView) -> str:
        history = _history_of(view)
        lines = [f"Round {len(history) + 1} of {self._rounds(view)}."] if len(history) < self._rounds(view) else []
        if not history:
            lines.append("No rounds played yet.")
        for t, (mine, theirs) in enumerate(history, start=1):
            verdict = {1: "you won", -1: "you lost", 0: "tie"}[round_reward(mine, theirs)]
            lines.append(f"Round {t}: you played {MOVES[mine]}, opponent played {MOVES[theirs]} ({verdict}).")
        score = sum(round_reward(m, t) for m, t in history)
        lines.append(f"Your score so far: {score:+d}.")
        return "\n".join(lines)

    def legal_moves(self, view: SeatView) -> list[Move]:
        return [Move(i, name, (name[0],)) for i, name in enumerate(MOVES)]

    def action_name(self, view: SeatView, action: int) -> str:
        return MOVES[action] if 0 <= action < len(MOVES) else f"action {action}"

    def episode_summary(self, view: SeatView) -> str:
        history = _history_of(view)
        score = sum(round_reward(m, t) for m, t in history)
        outcome = "You won" if score > 0 else "You lost" if score < 0 else "It was a draw"
        played = ", ".join(f"{MOVES[m]} vs {MOVES[t]}" for m, t in history) or "no rounds"
        return f"{outcome} with a score of {score:+d} over {len(history)} rounds ({played})."
