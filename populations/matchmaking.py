"""Matchmaking: which opponent each group of trials faces, on which seed, from which seat.

MAGE's "stationary grouping": every group of G trials faces exactly one opponent, so the group baseline is a
per-opponent baseline. All randomness is derived from the run seed, the iteration and the learner's name, so
the matchups of one learner never depend on the other learners, the pool's history aside.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import attrs
import numpy as np

from arena.core.api.errors import ArenaError
from arena.core.api.seeding import derive_seed
from arena.populations.pool import OpponentPool, PoolMember
from arena.populations.settings import PFSPConfig

LearnerSeat = Literal["random", "first", "last"]


@attrs.frozen
class Matchup:
    """One group: ``learner`` against the pool member ``opponent`` (seat spec ``opponent_spec``) on ``seed``.

    ``learner_first`` says the learner takes the first seat (``env.possible_agents[0]``). In an arena of three or
    more seats (three-player Kuhn poker) ``others`` are the pool members, ``(name, seat spec)``, that fill the seats
    beyond the learner's and ``opponent``'s, and ``learner_index`` is the learner's seat; the opponents then sit in
    the order ``opponent``, ``*others`` around it (``seats``). With two seats ``learner_index`` is 0 or 1.
    """

    learner: str
    group_id: str
    opponent: str
    opponent_spec: str
    seed: int
    learner_first: bool
    others: tuple[tuple[str, str], ...] = ()
    learner_index: int = attrs.field(
        default=attrs.Factory(lambda self: 0 if self.learner_first else 1, takes_self=True)
    )

    def seats(self, learner_spec: str) -> tuple[str, ...]:
        """The trial's seat specs: the learner's at ``learner_index``, the opponents in order around it."""
        if not self.opponent_spec:
            return (learner_spec,)
        return seated(learner_spec, [self.opponent_spec, *(spec for _, spec in self.others)], self.learner_index)

    def seat_names(self) -> tuple[str, ...]:
        """The players' names in seat order (the learner by its name), like ``seats``."""
        if not self.opponent_spec:
            return (self.learner,)
        return seated(self.learner, [self.opponent, *(name for name, _ in self.others)], self.learner_index)


def seated(learner: str, opponents: Sequence[str], index: int) -> tuple[str, ...]:
    """``opponents`` in order with ``learner`` inserted at seat ``index``."""
    return (*opponents[:index], learner, *opponents[index:])


def group_id(iteration: int, learner: str, group: int) -> str:
    return f"it{iteration:05d}-{learner}-g{group:03d}"


def default_matchups(
    pool: OpponentPool,
    learners: Sequence[str],
    iteration: int,
    groups: int,
    learner_seat: LearnerSeat,
    seed: int,
    pfsp: PFSPConfig,
    task_pool: int = 0,
    players: int = 2,
    draw: str = "random",
) -> list[Matchup]:
    """``groups`` matchups per learner, learners in the given order, for an arena of ``players`` seats.

    An empty pool means a single-agent arena (coding, text_maze): every matchup is the learner alone
    (``opponent`` and ``opponent_spec`` empty) on its group seed, which picks the task.

    Per learner one generator, ``default_rng(derive_seed(seed, "matchups", iteration, learner))``, draws for each
    group the opponent (``pool.sample``) and then, with ``learner_seat: random``, the seat (first on an even
    ``integers(2)``). The group seed is ``derive_seed(seed, "group", iteration, learner, g) % 2**31``, or with
    ``task_pool`` N that value modulo N: the groups then draw from N recurring tasks, which methods that learn
    across episodes of the same task need (EMPO²'s per-task tip memory, SGE's per-task strategy buffers).

    With ``players`` above 2 the same generator draws, after the opponent, the learner's seat (``random``:
    ``integers(players)``; ``first`` 0, ``last`` the final seat) and then one more pool member per remaining
    seat (``pool.sample`` again, so a member can fill several seats). Two seats draw exactly as before.

    With ``draw`` ``balanced`` the groups' opponents are ``balanced_opponents`` (drawn first, from the same
    generator) instead of one ``pool.sample`` per group; seats and extra seats are drawn as above.
    """
    if learner_seat not in ("random", "first", "last"):
        raise ArenaError(f"learner_seat must be random, first or last, got {learner_seat!r}")
    if players < 1:
        raise ArenaError(f"an arena has at least one seat, got players={players}")
    if draw not in ("random", "balanced"):
        raise ArenaError(f"opponent_draw must be random or balanced, got {draw!r}")
    out = []
    for learner in learners:
        rng = np.random.default_rng(derive_seed(seed, "matchups", iteration, learner))
        planned = balanced_opponents(pool, learner, groups, rng, pfsp) if draw == "balanced" and pool.members else []
        for g in range(groups):
            if not pool.members:
                out.append(
                    Matchup(
                        learner=learner,
                        group_id=group_id(iteration, learner, g),
                        opponent="",
                        opponent_spec="",
                        seed=int(derive_seed(seed, "group", iteration, learner, g) % (2**31) % (task_pool or 2**31)),
                        learner_first=True,
                    )
                )
                continue
            member = planned[g] if planned else pool.sample(learner, rng, pfsp)
            # The seat draw comes after the opponent draw, and only for random seats.
            if players <= 2:
                first = bool(rng.integers(2) == 0) if learner_seat == "random" else learner_seat == "first"
                index = 0 if first else 1
                others: tuple[tuple[str, str], ...] = ()
            else:
                if learner_seat == "random":
                    index = int(rng.integers(players))
                else:
                    index = 0 if learner_seat == "first" else players - 1
                first = index == 0
                drawn = [pool.sample(learner, rng, pfsp) for _ in range(players - 2)]
                others = tuple((extra.name, extra.spec) for extra in drawn)
            out.append(
                Matchup(
                    learner=learner,
                    group_id=group_id(iteration, learner, g),
                    opponent=member.name,
                    opponent_spec=member.spec,
                    seed=int(derive_seed(seed, "group", iteration, learner, g) % (2**31) % (task_pool or 2**31)),
                    learner_first=first,
                    others=others,
                    learner_index=index,
                )
            )
    return out


def balanced_opponents(
    pool: OpponentPool, learner: str, groups: int, rng: np.random.Generator, pfsp: PFSPConfig
) -> list[PoolMember]:
    """``groups`` opponents in proportion to ``pool.sampling_weights``: each member gets ``floor(p·groups)``
    groups, the groups left over go to members drawn without replacement in proportion to their remainders, and
    the list is shuffled. Each member gets its quota p·groups rounded down or up (independent draws can give it
    anything from 0 to ``groups``), so an iteration of 2 groups against a 50/50 pool always meets both members."""
    weights = pool.sampling_weights(learner, pfsp)
    names = list(weights)
    quota = np.array([weights[n] * groups for n in names], dtype=float)
    counts = np.floor(quota + 1e-9).astype(int)
    left = groups - int(counts.sum())
    if left > 0:
        remainder = np.clip(quota - counts, 0.0, None)
        extra = rng.choice(len(names), size=left, replace=False, p=remainder / remainder.sum())
        counts[extra] += 1
    chosen = [pool.members[n] for n, c in zip(names, counts, strict=True) for _ in range(int(c))]
    return [chosen[i] for i in rng.permutation(len(chosen))]
