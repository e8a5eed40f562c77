"""The opponent pool: its members, each learner's record against each member, and the draw of an opponent.

A member is anything that can take a seat: a scripted opponent (``conservative``, ``mcts:100``), a frozen model
(``model:/path``), a snapshot of a learner, or a live learner. ``sampling_weights`` is the distribution a learner
draws its opponents from; ``PFSPConfig`` documents the formula.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs
import numpy as np

from arena.core.api.errors import ArenaError
from arena.populations.ratings import count_result
from arena.populations.settings import PFSPConfig

MemberKind = Literal["scripted", "model", "snapshot", "learner"]
_KINDS = ("scripted", "model", "snapshot", "learner")


@attrs.frozen
class PoolMember:
    """One opponent of the pool.

    ``spec`` is the seat spec the trainer puts in the trial; ``owner`` is the learner a snapshot was taken from
    (for a ``learner`` member: the learner itself); ``added_at`` the iteration a snapshot joined.
    """

    name: str
    spec: str
    weight: float = 1.0
    kind: MemberKind = "scripted"
    owner: str | None = None
    added_at: int | None = None


@attrs.define
class MatchStats:
    """A learner's results against one member, from the learner's side."""

    wins: int = 0
    draws: int = 0
    losses: int = 0

    @property
    def games(self) -> int:
        return self.wins + self.draws + self.losses

    def win_probability(self, prior_games: float) -> float:
        """(wins + draws/2 + 0.5·prior_games) / (games + prior_games): shrunk towards an even match."""
        return (self.wins + 0.5 * self.draws + 0.5 * prior_games) / (self.games + prior_games)


def pfsp_priority(x: float, pfsp: PFSPConfig) -> float:
    """f(x) of ``PFSPConfig``: how much a learner that beats a member with probability ``x`` should meet it."""
    if pfsp.weighting == "hard":
        return (1.0 - x) ** pfsp.power
    if pfsp.weighting == "variance":
        return x * (1.0 - x)
    return 1.0 - x


class OpponentPool:
    """Members in insertion order, plus per-(learner, member) match statistics.

    ``learner_specs`` maps each learner to its live seat spec: a member with that spec (or the learner's own
    ``learner`` member) is never offered to that learner, since it would be the learner playing itself.
    """

    def __init__(self, members: Iterable[PoolMember] = (), learner_specs: dict[str, str] | None = None) -> None:
        self.members: dict[str, PoolMember] = {}
        self.learner_specs: dict[str, str] = dict(learner_specs or {})
        self._stats: dict[tuple[str, str], MatchStats] = {}
        for member in members:
            self.add(member)

    def __contains__(self, name: object) -> bool:
        return name in self.members

    def __len__(self) -> int:
        return len(self.members)

    def add(self, member: PoolMember) -> None:
        if member.name in self.members:
            raise ArenaError(f"the opponent pool already has a member named {member.name!r}")
        if member.kind not in _KINDS:
            raise ArenaError(f"pool member {member.name!r} has unknown kind {member.kind!r}")
        if not member.weight >= 0:  # also rejects NaN
            raise ArenaError(f"pool member {member.name!r} has a negative weight {member.weight}")
        self.members[member.name] = member

    def remove(self, name: str) -> PoolMember:
        """Take ``name`` out of the pool; its statistics go with it."""
        member = self.members.pop(name)
        self._stats = {k: v for k, v in self._stats.items() if k[1] != name}
        return member

    def snapshots(self, owner: str) -> list[PoolMember]:
        """``owner``'s snapshots, oldest first."""
        return [m for m in self.members.values() if m.kind == "snapshot" and m.owner == owner]

    def add_snapshot(self, member: PoolMember, max_snapshots: int) -> list[PoolMember]:
        """Add a snapshot, then drop its owner's oldest ones beyond ``max_snapshots``; returns the dropped."""
        if member.kind != "snapshot" or member.owner is None:
            raise ArenaError(f"pool member {member.name!r} is not a snapshot of a learner")
        self.add(member)
        mine = self.snapshots(member.owner)
        return [self.remove(m.name) for m in mine[: max(0, len(mine) - max_snapshots)]]

    # -- statistics ---------------------------------------------------------------------------------------------

    def stats(self, learner: str, member: str) -> MatchStats:
        """A copy of ``learner``'s record against ``member`` (all zero before their first game)."""
        s = self._stats.get((learner, member))
        return MatchStats() if s is None else attrs.evolve(s)

    def record(self, learner: str, member: str, score: float) -> None:
        """One game of ``learner`` against ``member``; ``score`` is the learner's: 1 win, 0.5 draw, 0 loss."""
        if member not in self.members:
            raise ArenaError(f"the opponent pool has no member {member!r}")
        count_result(self._stats.setdefault((learner, member), MatchStats()), score)

    # -- drawing opponents --------------------------------------------------------------------------------------

    def eligible(self, learner: str) -> list[PoolMember]:
        """The members ``learner`` may face, in pool order: all but itself and its live seat."""
        own_spec = self.learner_specs.get(learner)
        return [
            m
            for m in self.members.values()
            if m.name != learner and not (m.kind == "learner" and m.owner == learner) and m.spec != own_spec
        ]

    def sampling_weights(self, learner: str, pfsp: PFSPConfig) -> dict[str, float]:
        """Probability of each eligible member for ``learner`` (sums to 1; zero-weight members included)."""
        members = self.eligible(learner)
        base = np.array([m.weight for m in members], dtype=float)
        if base.sum() <= 0:
            raise ArenaError(f"the opponent pool has no member with positive weight for learner {learner!r}")
        probs = base / base.sum()
        if pfsp.enabled and pfsp.mix > 0:
            f = np.array(
                [pfsp_priority(self.stats(learner, m.name).win_probability(pfsp.prior_games), pfsp) for m in members]
            )
            prioritised = base * f
            # f > 0 whenever x < 1, which prior_games > 0 guarantees; only underflow (huge power) can zero it all.
            if prioritised.sum() > 0:
                probs = (1.0 - pfsp.mix) * probs + pfsp.mix * prioritised / prioritised.sum()
        return {m.name: float(p) for m, p in zip(members, probs, strict=True)}

    def sample(self, learner: str, rng: np.random.Generator, pfsp: PFSPConfig) -> PoolMember:
        """One opponent for ``learner``, drawn from ``sampling_weights`` with one ``rng.choice`` call."""
        weights = self.sampling_weights(learner, pfsp)
        names = list(weights)
        p = np.array([weights[n] for n in names], dtype=float)
        return self.members[names[int(rng.choice(len(names), p=p / p.sum()))]]

    # -- state --------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """JSON: ``{"members": [PoolMember fields...], "stats": [{"learner", "member", "wins", "draws",
        "losses"}...], "learner_specs": {learner: spec}}``, members and stats in insertion order."""
        return {
            "members": [attrs.asdict(m) for m in self.members.values()],
            "stats": [{"learner": k[0], "member": k[1], **attrs.asdict(v)} for k, v in self._stats.items()],
            "learner_specs": dict(self.learner_specs),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace members, statistics and learner specs by those in ``state``."""
        try:
            members = [PoolMember(**m) for m in state["members"]]
            stats = {
                (str(s["learner"]), str(s["member"])): MatchStats(int(s["wins"]), int(s["draws"]), int(s["losses"]))
                for s in state["stats"]
            }
            learner_specs = {str(k): str(v) for k, v in state["learner_specs"].items()}
        except (KeyError, TypeError, AttributeError) as exc:
            raise ArenaError(f"opponent pool state is malformed: {exc}") from None
        self.members = {}
        self._stats = {}
        self.learner_specs = learner_specs
        for member in members:
            self.add(member)
        self._stats = stats
