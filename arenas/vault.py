"""Vault: a one-decision, one-seat arena in which only a memory of the same task can beat chance (EMPO²'s testbed).

A *task* is a vault, named by its number: the trial seed (``reset(seed=s)`` plays vault ``s``; with ``tasks`` N,
vault ``s % N``). A vault has ``chests`` closed chests (numbered 1..N, default 16); one holds the treasure, always
the same one for the same vault (``treasure_chest``). Each episode is a single action, ``open chest k``: score 1
(a win) if the treasure is in chest k, else 0. Either way the episode summary then says which chest held it
("The treasure was in chest #9."; the ``#`` appears nowhere else, so a model can mark the number after it, as
``tiny-vault`` does: ``arena.core.models.tiny.vault_reader``), so a tip written from any episode, a failed one
included, can record it.
The observation names the vault ("Vault 37 has 16 chests, numbered 1 to 16, all closed.") so that a task is
recognisable when it comes back, and says nothing about where the treasure is.

Why it exists (issue 26, "Exploration methods that show"): without memory of the task a policy opens the right
chest 1/N of the time (``blind_ceiling``: exactly 1/N over any pool of whole blocks of tasks, see below); with a
memory of an earlier episode of the same vault it can open it every time. EMPO² keeps its tips per task (the
trial seed), so with ``task_pool: P`` a task drawn again in a later iteration finds the tips of its earlier
visits: ``seen_probability`` is the chance that a drawn task was drawn in an earlier iteration, and
``memory_ceiling`` the resulting best success of a rollout that reads its tips. Every number is exact
(``fractions.Fraction``); ``python -m arena.arenas.vault`` prints the table of docs/testbeds.md, section 4.

Treasures are balanced: over every block of ``chests`` consecutive vault numbers (0..N-1, N..2N-1, ...) each chest
holds the treasure exactly once, in an order drawn from the block's number (numpy's seeded PCG64). So over a pool
of whole blocks (``task_pool: 32`` with 16 chests: two blocks) the best policy that ignores which vault it is in
(always the same chest) wins exactly 1/N, as a fresh vault does; a pool that is not whole blocks may favour a
chest slightly, which ``blind_ceiling`` computes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.arenas.one_decision import FoundIsWin, env_of
from arena.core.api.arena import Move, SeatView

__all__ = [
    "DEFAULT_CHESTS",
    "VaultAdapter",
    "VaultEnv",
    "blind_ceiling",
    "group_hit_probability",
    "mean_seen",
    "memory_ceiling",
    "mixed_group_probability",
    "recurrence_table",
    "seen_probability",
    "task_of",
    "treasure_chest",
]

DEFAULT_CHESTS = 16
_SEEDS = 1 << 63


def task_of(seed: int, tasks: int = 0) -> int:
    """The vault number a reset seed plays: the seed itself, or ``seed % tasks`` when ``tasks`` > 0."""
    task = int(seed) % _SEEDS
    return task % int(tasks) if tasks else task


def treasure_chest(task: int, chests: int = DEFAULT_CHESTS) -> int:
    """The chest (1..chests) holding vault ``task``'s treasure: a permutation of the chests per block of
    ``chests`` consecutive vaults, drawn from the block number, so each block uses every chest once."""
    block, slot = divmod(int(task) % _SEEDS, int(chests))
    order = np.random.default_rng([block, int(chests)]).permutation(int(chests))
    return int(order[slot]) + 1


# -- the env -----------------------------------------------------------------------------------------------------


class VaultEnv(FoundIsWin, AECEnv[str, dict[str, np.ndarray], int | None]):
    """The vault as a one-agent PettingZoo AEC env (agent ``player_0``), one action per episode.

    Observation: ``{"observation": int64 [vault number, chests, chests opened (0 or 1)], "action_mask": int8 over
    the N + 1 action ids}``; the mask is also in ``infos[agent]["action_mask"]``. Action k (1..N) opens chest k, so
    a move's id is its chest's number; id 0 is never legal (masked out). ``reset(seed=None)`` draws the next seed
    from the env's own generator.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "arena_vault_v0", "is_parallelizable": False}

    def __init__(self, chests: int = DEFAULT_CHESTS, tasks: int = 0) -> None:
        super().__init__()
        if int(chests) < 2:
            raise ValueError(f"chests must be at least 2, got {chests}")
        if int(tasks) < 0:
            raise ValueError(f"tasks must be 0 (every seed its own vault) or positive, got {tasks}")
        self.chests = int(chests)
        self.tasks = int(tasks)
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        self.render_mode = None
        n = self.chests + 1
        top = np.iinfo(np.int64).max
        self._observation_spaces = {
            "player_0": spaces.Dict(
                {
                    "observation": spaces.Box(low=0, high=np.array([top, self.chests, 1]), dtype=np.int64),
                    "action_mask": spaces.Box(low=0, high=1, shape=(n,), dtype=np.int8),
                }
            )
        }
        self._action_spaces = {"player_0": spaces.Discrete(n)}
        self._seed_rng = np.random.default_rng()
        #: The vault (task) number of this episode and the chest holding its treasure.
        self.task = 0
        self.treasure = treasure_chest(0, self.chests)
        #: The chest opened this episode (None before it).
        self.opened: int | None = None
        self.agent_selection = "player_0"
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.arena_text_adapter = VaultAdapter()

    @property
    def task_id(self) -> str:
        """The task's id in ``episode_details``: ``"<chests>:<vault number>"`` (like text_maze's ``size:layout``)."""
        return f"{self.chests}:{self.task}"

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._action_spaces[agent]

    def action_mask(self) -> np.ndarray:
        mask = np.ones(self.chests + 1, dtype=np.int8)
        mask[0] = 0
        return mask

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        opened = 0 if self.opened is None else 1
        return {
            "observation": np.array([self.task, self.chests, opened], dtype=np.int64),
            "action_mask": self.action_mask(),
        }

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._seed_rng = np.random.default_rng(int(seed) % _SEEDS)
        else:
            seed = int(self._seed_rng.integers(1 << 62))
        self.task = task_of(seed, self.tasks)
        self.treasure = treasure_chest(self.task, self.chests)
        self.opened = None
        self.agents = self.possible_agents[:]
        self.agent_selection = "player_0"
        self.rewards = {"player_0": 0.0}
        self._cumulative_rewards = {"player_0": 0.0}
        self.terminations = {"player_0": False}
        self.truncations = {"player_0": False}
        self.infos = {"player_0": {"action_mask": self.action_mask(), "task_id": self.task_id}}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if action is None or not 1 <= int(action) <= self.chests:
            raise ValueError(f"action must be a chest number in [1, {self.chests}], got {action!r}")
        self._cumulative_rewards[agent] = 0.0
        self.opened = int(action)
        self.rewards = {agent: 1.0 if self.found else 0.0}
        self.terminations = {agent: True}
        self.truncations = {agent: False}
        self.infos = {agent: {"action_mask": self.action_mask(), "task_id": self.task_id}}
        self._accumulate_rewards()

    @property
    def found(self) -> bool:
        return self.opened is not None and self.opened == self.treasure


def _vault(view: SeatView) -> VaultEnv:
    return env_of(view, VaultEnv)


class VaultAdapter:
    """Rules, an observation naming the vault (nothing secret), the moves ``open chest k``, and the summary that
    reveals the treasure's chest."""

    def rules(self, view: SeatView) -> str:
        n = _vault(view).chests
        return (
            f"You are in a vault with {n} closed chests, numbered 1 to {n}. Exactly one chest holds the treasure, "
            "and a vault always keeps its treasure in the same chest: a vault you have seen before has it where it "
            "was then. You open one chest: it scores 1 if it holds the treasure and 0 otherwise. Either way you are "
            "then told which chest held the treasure."
        )

    def observation(self, view: SeatView) -> str:
        env = _vault(view)
        n = env.chests
        # No "N: " after a number: the tokenizer makes "7: " one token, which `tiny` reads as a move listing's line.
        return f"Vault {env.task} has {n} chests, numbered 1 to {n}, all closed. Open one chest."

    def legal_moves(self, view: SeatView) -> list[Move]:
        return [Move(k, f"open chest {k}", (f"chest {k}",)) for k in range(1, _vault(view).chests + 1)]

    def all_moves(self, view: SeatView) -> list[Move]:
        return self.legal_moves(view)

    def action_name(self, view: SeatView, action: int) -> str:
        return f"open chest {action}" if 1 <= action <= _vault(view).chests else f"action {action}"

    def episode_summary(self, view: SeatView) -> str:
        env = _vault(view)
        if env.opened is None:
            return f"In vault {env.task} no chest was opened."
        if env.found:
            said = f"you opened chest {env.opened} and found the treasure (score 1)"
        else:
            said = f"you opened chest {env.opened}, empty (score 0)"
        # "#" before the number and nowhere else in a vault prompt: a model can mark the fact (``tiny-vault``).
        return f"In vault {env.task} {said}. The treasure was in chest #{env.treasure}."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = _vault(view)
        key = "none" if env.opened is None else "hit" if env.found else "miss"
        return {
            "task_id": env.task_id,
            "score": 1.0 if env.found else 0.0,
            "outcome_key": key,
            "chest": env.opened,
            "treasure": env.treasure,
        }


# -- ceilings ----------------------------------------------------------------------------------------------------


def blind_ceiling(tasks: Iterable[int], chests: int = DEFAULT_CHESTS) -> Fraction:
    """The best success, over ``tasks`` drawn uniformly, of a policy that ignores which vault it is in (the same
    chest every time): the largest share of the tasks whose treasure one chest holds. 1/chests for whole blocks."""
    found = [treasure_chest(t, chests) for t in tasks]
    if not found:
        raise ValueError("blind_ceiling needs at least one task")
    return Fraction(max(np.bincount(found, minlength=chests + 1).tolist()), len(found))


def seen_probability(pool: int, draws: int, earlier: int) -> Fraction:
    """The probability that a task drawn now was drawn in one of ``earlier`` earlier iterations, when every
    iteration draws ``draws`` tasks uniformly, with replacement, from a pool of ``pool``: 1 − (1 − 1/P)^(n·i).

    In ``arena train`` the draws of an iteration are its groups (``groups``): the ``group_size`` trials of a group
    share one seed (``populations/matchmaking.default_matchups``), so ``draws = groups``. A task drawn twice
    within one iteration does not count: with one decision per episode, every trial of an iteration acts before
    the first tip of the iteration is stored."""
    if pool < 1 or draws < 0 or earlier < 0:
        raise ValueError(f"need pool >= 1, draws >= 0, earlier >= 0; got {pool}, {draws}, {earlier}")
    return 1 - (1 - Fraction(1, pool)) ** (draws * earlier)


def mean_seen(pool: int, draws: int, iterations: int) -> Fraction:
    """The expected share of the rollouts of iterations 0..iterations-1 whose task an earlier iteration drew."""
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    return sum((seen_probability(pool, draws, i) for i in range(iterations)), Fraction(0)) / iterations


def memory_ceiling(chests: int, seen: Fraction | float) -> Fraction:
    """The best success of a rollout that reads the memory of its task, when a share ``seen`` of them had an earlier
    visit (whose summary named the treasure's chest): seen · 1 + (1 − seen) / chests."""
    s = Fraction(seen)
    return s + (1 - s) / chests


def group_hit_probability(chests: int, group_size: int) -> Fraction:
    """The probability that a group of ``group_size`` blind rollouts of one vault (each chest 1/chests) has at least
    one win: only such a group gives GRPO a non-zero advantage. 1 − (1 − 1/N)^G."""
    return 1 - (1 - Fraction(1, chests)) ** group_size


def mixed_group_probability(success: Fraction | float, group_size: int) -> Fraction:
    """The probability that a group of ``group_size`` rollouts, each winning with probability ``success``, has both a
    win and a loss: 1 − s^G − (1 − s)^G. Only such a group has a non-zero GRPO advantage (EMPO² trains its memory
    rollouts with GRPO's group baseline too). A memory rollout of a vault seen before that always opens the chest
    its tips name (s = 1) has none: the off-policy update then has nothing to distil."""
    s = Fraction(success)
    return 1 - s**group_size - (1 - s) ** group_size


def recurrence_table(
    chests: int = DEFAULT_CHESTS,
    pool: int = 32,
    draws: int = 8,
    iterations: Sequence[int] = (1, 2, 3, 5, 10, 20, 29),
) -> str:
    """Markdown: per iteration index i (0-based; i earlier iterations), the share of its rollouts on a task seen
    before, the memory ceiling there, and the blind ceiling (what docs/testbeds.md, section 4, shows)."""
    blind = Fraction(1, chests)
    lines = [
        f"chests {chests}, task_pool {pool}, {draws} draws (groups) per iteration",
        "",
        "| iteration i | seen before | success with memory (ceiling) | without memory (blind) |",
        "| --- | --- | --- | --- |",
    ]
    for i in iterations:
        seen = seen_probability(pool, draws, i)
        lines.append(f"| {i} | {float(seen):.4f} | {float(memory_ceiling(chests, seen)):.4f} | {float(blind):.4f} |")
    for total in (20, 30):
        seen = mean_seen(pool, draws, total)
        lines.append(
            f"| mean of 0..{total - 1} | {float(seen):.4f} | {float(memory_ceiling(chests, seen)):.4f} | "
            f"{float(blind):.4f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(recurrence_table(chests=9, pool=36))
