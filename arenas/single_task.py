"""The base of single-task text arenas (coding, instruct): one seat, one task per episode, a text answer.

``SingleTaskTextEnv`` holds the PettingZoo bookkeeping such an env shares (agents, spaces, rewards, the task
choice on reset); a subclass provides its task list and what an answer earns. Kept apart from ``base`` so that
the engine's contracts do not import PettingZoo and gymnasium.
"""

from __future__ import annotations

import abc
import random
import string
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv


def pick_task_index(
    task_ids: Sequence[str], seed: int | None, options: dict[str, Any] | None, rng: Any, where: str
) -> int:
    """Which task an episode plays: ``options["task_id"]`` if given, else ``seed % len``, else a draw from ``rng``.

    ``where`` names the task list in the error for an unknown id ("split 'test' with tiers (1, 2)").
    """
    if options and options.get("task_id") is not None:
        if options["task_id"] not in task_ids:
            raise ValueError(f"task {options['task_id']!r} is not in {where}")
        return list(task_ids).index(options["task_id"])
    if seed is not None:
        return int(seed) % len(task_ids)
    return int(rng.randrange(len(task_ids)))


def open_single_agent_episode(env: Any, info: dict[str, Any]) -> None:
    """Reset the PettingZoo bookkeeping of a one-seat AEC env (``player_0`` to move, nothing earned yet)."""
    env.agents = list(env.possible_agents)
    env.agent_selection = env.possible_agents[0]
    agent = env.agent_selection
    env.rewards = {agent: 0.0}
    env._cumulative_rewards = {agent: 0.0}
    env.terminations = {agent: False}
    env.truncations = {agent: False}
    env.infos = {agent: info}


class _Task(Protocol):
    """What ``SingleTaskTextEnv`` reads of a task: its id (for ``options["task_id"]`` and infos) and its tier."""

    @property
    def task_id(self) -> str: ...

    @property
    def tier(self) -> int: ...


TaskT = TypeVar("TaskT", bound=_Task)


class SingleTaskTextEnv(AECEnv[str, np.ndarray, str], abc.ABC, Generic[TaskT]):
    """A one-seat AEC env that plays one task of a fixed list per episode and takes free text as its action.

    The coding and instruct arenas are such envs; this class holds the skeleton they share, so each only says what
    its tasks are and how an answer is judged.

    A subclass passes to ``__init__`` its task list (in the order seeds pick from), the counter's upper bound (the
    observation's second entry: attempts left, answered), the longest text its action space admits, its text
    adapter, and the error message for an empty task list (setting the attributes its hooks read before that call);
    it sets ``metadata`` and implements:

    * ``_counter()``: the observation's second entry now;
    * ``_task_list_name()``: the task list as the error for an unknown ``options["task_id"]`` names it;
    * ``_start_task()``: clear the per-episode state once ``reset`` has chosen ``self.task``;
    * ``_answer(text)``: judge one answer, returning ``(reward, done, info)`` for ``player_0``;
    * ``arena_outcome(returns, agent)``.

    It inherits the PettingZoo bookkeeping (``possible_agents == ["player_0"]``, no render mode, rewards,
    terminations, truncations, infos, ``agent_selection``); the spaces (``Box`` ``[task index, counter]`` of int64
    and ``Text`` of printable characters); ``observe``; ``reset`` (the task is ``options["task_id"]``, else
    ``tasks[seed % len(tasks)]``, else a draw from a fixed-seed RNG; infos start as ``{task_id, tier}``); ``step``
    (a step after the end is PettingZoo's dead step; the action becomes a ``str``, ``None`` the empty one; the reward
    of each step is what ``_answer`` says, never carried over); and no-op ``render``/``close``.
    """

    def __init__(
        self, tasks: Sequence[TaskT], *, counter_high: int, max_text: int, adapter: Any, no_tasks: str
    ) -> None:
        super().__init__()
        self.tasks = list(tasks)
        if not self.tasks:
            raise ValueError(no_tasks)
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        self.render_mode = None
        self.task_index = 0
        self.task: TaskT = self.tasks[0]
        self._rng = random.Random(0)
        high = np.array([len(self.tasks) - 1, counter_high], dtype=np.int64)
        self._observation_space = spaces.Box(low=0, high=high, shape=(2,), dtype=np.int64)
        self._action_space = spaces.Text(max_length=max_text, min_length=0, charset=string.printable)
        self.arena_text_adapter = adapter
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.agent_selection = "player_0"

    @abc.abstractmethod
    def _counter(self) -> int:
        """The observation's second entry (attempts left, whether the answer was given)."""

    @abc.abstractmethod
    def _task_list_name(self) -> str:
        """The task list in the error for an unknown task id (``"split 'test' with tiers (1, 2)"``)."""

    @abc.abstractmethod
    def _start_task(self) -> None:
        """Clear the per-episode state; ``self.task`` is the new episode's task."""

    @abc.abstractmethod
    def _answer(self, text: str) -> tuple[float, bool, dict[str, Any]]:
        """Judge one answer: the step's reward, whether the episode ends, and the step's info."""

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Text:
        return self._action_space

    def observe(self, agent: str) -> np.ndarray:
        return np.array([self.task_index, self._counter()], dtype=np.int64)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.task_index = pick_task_index(
            [t.task_id for t in self.tasks], seed, options, self._rng, self._task_list_name()
        )
        self.task = self.tasks[self.task_index]
        self._start_task()
        open_single_agent_episode(self, {"task_id": self.task.task_id, "tier": self.task.tier})

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        text = action if isinstance(action, str) else "" if action is None else str(action)
        reward, done, info = self._answer(text)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {agent: reward}
        self.terminations = {agent: done}
        self.infos = {agent: info}
        self._accumulate_rewards()

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None
