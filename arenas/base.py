"""Contracts between arenas, the text adapter, opponents and the rollout engine.

An *arena* is any PettingZoo environment (AEC or Parallel). The engine never reads an environment's
internals: it looks at a seat through a ``SeatView`` and talks to the environment's ``TextAdapter`` (for LLM
seats) or to an ``Opponent`` (for programmatic seats).
"""

from __future__ import annotations

import abc
import random
import string
from collections.abc import Sequence
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

import attrs
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv


@attrs.frozen
class Move:
    """One legal move as the model sees it.

    ``action`` is the environment's action id, ``name`` the text shown in the prompt (``"Bet"``,
    ``"(1,2)"``), ``aliases`` other spellings the parser accepts (``"x(1,2)"``, ``"centre"``).
    """

    action: int
    name: str
    aliases: tuple[str, ...] = ()


@attrs.frozen
class ParseResult:
    """What the parser made of an answer: a legal ``action`` or an ``error`` saying why not.

    ``action`` is an action id, or for free-text arenas any action their env accepts (a string of code).
    """

    action: Any
    move: str | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.action is not None


@attrs.frozen(eq=False)
class SeatView:
    """One seat's view of the environment at a decision point (or at the end of an episode).

    ``env`` is the PettingZoo env itself (for OpenSpiel arenas ``env.unwrapped.game_state`` is the pyspiel
    state: search- and solver-based opponents read it; text adapters of built-in arenas render it).
    ``action_mask`` is ``None`` when the environment gives none (then every action of the space is legal).
    ``seat`` is the index of ``agent`` in ``env.possible_agents``.
    """

    env: Any
    agent: str
    seat: int
    observation: Any
    action_mask: np.ndarray | None
    info: dict[str, Any] = attrs.field(factory=dict)

    def legal_actions(self) -> list[int]:
        if self.action_mask is not None:
            return [int(a) for a in np.flatnonzero(np.asarray(self.action_mask))]
        space = self.env.action_space(self.agent)
        return list(range(int(space.n)))


@runtime_checkable
class TextAdapter(Protocol):
    """Renders a seat's view as text and names moves. Parsing answers is shared: ``arena.arenas.text.parse_action``.

    Built-in arenas set ``env.unwrapped.arena_text_adapter`` to their adapter; any other env gets the generic
    renderer (``arena.arenas.text.GenericTextAdapter``), which needs a Discrete action space.
    """

    def rules(self, view: SeatView) -> str:
        """The game's rules and which player this seat is; constant within an episode."""
        ...

    def observation(self, view: SeatView) -> str:
        """What this seat sees now (own cards, board, betting so far)."""
        ...

    def legal_moves(self, view: SeatView) -> list[Move]:
        """The legal moves now, in action-id order."""
        ...

    def action_name(self, view: SeatView, action: int) -> str:
        """A short name for ``action`` taken at ``view`` (used in step histories, also for other seats)."""
        ...

    def episode_summary(self, view: SeatView) -> str:
        """The end of an episode from this seat's side: outcome and anything revealed (showdown cards)."""
        ...

    # Optional methods, looked up with getattr by the engine (not part of the runtime check):
    #
    # ``parse_answer(view, answer: str) -> ParseResult``: free-text arenas (coding) turn the whole answer into
    #     an env action themselves; ``legal_moves`` then returns [] and no move list is shown.
    # ``answer_format(view) -> str``: the prompt's closing instruction for such arenas ("Write the function in
    #     one ```python block.") instead of "give exactly one legal move as <action>MOVE</action>".
    # ``episode_details(view) -> dict``: JSON-serialisable facts about the finished episode, stored in
    #     ``EpisodeRecord.details[agent]``; conventional keys ``task_id``, ``score``, ``outcome_key``.
    # ``all_moves(view) -> list[Move]``: the whole action space, so an illegal move is told from no move.


@runtime_checkable
class Opponent(Protocol):
    """A programmatic seat: scripted, random, search or solver based. Created per seat per trial, seeded.

    Factories registered through ``register_opponents`` have the signature
    ``factory(arena_id: str, arg: str | None, seed: int) -> Opponent``; ``arg`` is the text after the colon of
    a spec such as ``mcts:1000``.
    """

    name: str

    def act(self, view: SeatView) -> int:
        """Return a legal action id for ``view``."""
        ...


class OpponentFactory(Protocol):
    def __call__(self, arena_id: str, arg: str | None, seed: int) -> Opponent: ...


def moves_by_action(moves: Sequence[Move]) -> dict[int, Move]:
    return {m.action: m for m in moves}


# --------------------------------------------------------------------------------------------------------------
# Single-agent task arenas (coding, instruct): shared bookkeeping and base class
# --------------------------------------------------------------------------------------------------------------


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
