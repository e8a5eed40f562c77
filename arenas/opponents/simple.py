"""Scripted opponents that need no search: uniform random, tic-tac-toe cell preferences, rock-paper-scissors.

Rock-paper-scissors contract (the ``rock_paper_scissors`` arena is a ParallelEnv): actions are 0 rock,
1 paper, 2 scissors, and ``view.observation`` is an array of shape ``(rounds, 2)`` whose row ``i`` is round
``i`` as ``(own move, other's move)``, ``-1`` for rounds not yet played. The RPS opponents read nothing else,
so they work with any env that honours this contract.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arena.arenas.opponents._common import require_legal
from arena.core.api.arena import SeatView
from arena.core.api.errors import ArenaError

ROCK, PAPER, SCISSORS = 0, 1, 2


class RandomOpponent:
    """Uniform over the legal actions; works in any arena because it only uses ``view.legal_actions()``."""

    def __init__(self, seed: int, name: str = "random") -> None:
        self.name = name
        self._rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> int:
        legal = view.legal_actions()
        if not legal:
            raise RuntimeError(f"opponent {self.name!r} asked to act with no legal action")
        return int(legal[int(self._rng.integers(len(legal)))])


# Tic-tac-toe cells are OpenSpiel action ids: row * 3 + column, 0 = top left, 8 = bottom right.
TTT_PREFERENCES: dict[str, tuple[int, ...]] = {
    # corners first, then the centre, then edges: a classic "take corners" beginner strategy
    "ttt-corners": (0, 2, 6, 8, 4, 1, 3, 5, 7),
    # centre first, then corners, then edges: the textbook opening preference
    "ttt-center": (4, 0, 2, 6, 8, 1, 3, 5, 7),
    # edges first, then centre, then corners: a deliberately weak, unusual order
    "ttt-edges": (1, 3, 5, 7, 4, 0, 2, 6, 8),
    # reading order, left to right then top to bottom
    "ttt-row-major": (0, 1, 2, 3, 4, 5, 6, 7, 8),
    # column by column, top to bottom then left to right
    "ttt-col-major": (0, 3, 6, 1, 4, 7, 2, 5, 8),
    # the anti-diagonal (top right to bottom left), then the rest from the bottom right backwards
    "ttt-anti-diagonal": (2, 4, 6, 8, 7, 5, 3, 1, 0),
}


class CellPreferenceOpponent:
    """MAGE's fixed cell-preference player: the first empty cell in a fixed priority order (deterministic).

    Such players are exploitable in predictable ways, which is what the population needs: a learner can
    discover and reuse a plan against each across the episodes of a trial.
    """

    def __init__(self, name: str, order: Sequence[int]) -> None:
        if sorted(order) != list(range(9)):
            raise ValueError(f"{name}: a cell order must be a permutation of 0..8, got {order}")
        self.name = name
        self.order = tuple(order)

    def act(self, view: SeatView) -> int:
        legal = set(view.legal_actions())
        for cell in self.order:
            if cell in legal:
                return cell
        raise RuntimeError(f"opponent {self.name!r} asked to act on a full board")


def beats(move: int) -> int:
    """The move that beats ``move``: paper beats rock, scissors beat paper, rock beats scissors."""
    return (int(move) + 1) % 3


def rps_history(view: SeatView) -> np.ndarray:
    """The played rounds of ``view.observation`` as an ``(n, 2)`` int array of (own, other) moves."""
    obs = np.asarray(view.observation)
    if obs.ndim != 2 or obs.shape[1] != 2:
        raise ArenaError(
            f"rock-paper-scissors opponents need an observation of shape (rounds, 2), got shape {obs.shape}"
        )
    played = (obs >= 0).all(axis=1)
    return obs[played].astype(int)


class RpsOpponent:
    """Base for rock-paper-scissors opponents: seeded rng, legality check, shared history parsing."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self._rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> int:
        return require_legal(self.name, view, int(self.choose(rps_history(view))))

    def choose(self, history: np.ndarray) -> int:
        raise NotImplementedError

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        """The exact distribution of the next move given the played rounds (own, other): what ``choose`` samples.

        The ceilings (``arena.arenas.ceilings``) enumerate the opponent's randomness through it; a test holds
        ``choose`` to it over many seeds.
        """
        raise NotImplementedError

    def _random_move(self) -> int:
        return int(self._rng.integers(3))


def _point(move: int) -> np.ndarray:
    probs = np.zeros(3)
    probs[int(move)] = 1.0
    return probs


_UNIFORM = np.full(3, 1 / 3)


class RpsAlways(RpsOpponent):
    """Always the same move (``MOVE``): a hidden type that one round reveals (beaten by ``beats(MOVE)``)."""

    MOVE = ROCK

    def choose(self, history: np.ndarray) -> int:
        return self.MOVE

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        return _point(self.MOVE)


class RpsRock(RpsAlways):
    """Always rock: the simplest exploitable pattern (beaten by always paper)."""

    MOVE = ROCK


class RpsPaper(RpsAlways):
    """Always paper (beaten by always scissors)."""

    MOVE = PAPER


class RpsScissors(RpsAlways):
    """Always scissors (beaten by always rock)."""

    MOVE = SCISSORS


class RpsCycle(RpsOpponent):
    """Rock, paper, scissors, rock, ... by round number; stateless, so it follows the observation exactly."""

    def choose(self, history: np.ndarray) -> int:
        return len(history) % 3

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        return _point(len(history) % 3)


class RpsCopy(RpsOpponent):
    """Plays the other's previous move (tit-for-tat); the first move is random."""

    def choose(self, history: np.ndarray) -> int:
        return int(history[-1, 1]) if len(history) else self._random_move()

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        return _point(history[-1, 1]) if len(history) else _UNIFORM.copy()


class RpsBeatLast(RpsOpponent):
    """Plays what beats the other's previous move; the first move is random."""

    def choose(self, history: np.ndarray) -> int:
        return beats(history[-1, 1]) if len(history) else self._random_move()

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        return _point(beats(history[-1, 1])) if len(history) else _UNIFORM.copy()


class RpsFrequency(RpsOpponent):
    """Beats the other's most frequent move so far; ties (including the first round) are broken at random."""

    def choose(self, history: np.ndarray) -> int:
        counts = np.bincount(history[:, 1], minlength=3) if len(history) else np.zeros(3, dtype=int)
        most = np.flatnonzero(counts == counts.max())
        return beats(int(most[int(self._rng.integers(len(most)))]))

    def move_probs(self, history: np.ndarray) -> np.ndarray:
        counts = np.bincount(history[:, 1], minlength=3) if len(history) else np.zeros(3, dtype=int)
        probs = np.zeros(3)
        most = np.flatnonzero(counts == counts.max())
        for move in most:
            probs[beats(int(move))] += 1 / len(most)
        return probs


RPS_OPPONENTS: dict[str, type[RpsOpponent]] = {
    "rps-rock": RpsRock,
    "rps-paper": RpsPaper,
    "rps-scissors": RpsScissors,
    "rps-cycle": RpsCycle,
    "rps-copy": RpsCopy,
    "rps-beat-last": RpsBeatLast,
    "rps-frequency": RpsFrequency,
}
