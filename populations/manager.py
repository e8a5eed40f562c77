"""The population manager: learners, the opponent pool they draw from, its growth by snapshots, and ratings.

The trainer drives it once per iteration:

1. ``matchups(iteration, groups, learner_seat)``: each learner's groups, one pool member per group (in an arena
   of three or more seats, ``players``, one more drawn member per further seat); the trainer builds the trial
   specs and sets ``spec.meta = {"learner": name, "opponent": member name}`` on each (and ``seat_names``, every
   seat's player, when there are more than two seats).
2. ``record(trial)`` after every trial (the ``match_end`` moment): the learner's outcome in the trial's final
   episode updates its record against the member (which PFSP reads) and both players' ratings; a trial of
   three or more seats (three-player Kuhn poker, a free-for-all) is rated as one ranked game of all its seats.
3. ``evolve(iteration, snapshot)`` after the update, with the iteration counted from 1: every
   ``snapshot_every`` iterations each learner's frozen copy joins the pool as ``f"{learner}@it{iteration}"``.

Checkpoint state (``state_dict()``, JSON; a checkpoint's ``state.json`` holds it under ``"population"``)::

    {
      "version": 1,
      "learners": {learner name: live seat spec, ...},
      "pool": {
        "members": [{"name", "spec", "weight", "kind", "owner", "added_at"}, ...],   # pool order
        "stats": [{"learner", "member", "wins", "draws", "losses"}, ...],          # the learner's side
        "learner_specs": {learner name: live seat spec, ...}
      },
      "ratings": {"version": 2, "system": "openskill", "model", "players": [{"name", "elo", "mu", "sigma",
                  "games", "wins", "draws", "losses"}, ...]}                          # Ratings.state_dict()
    }

``arena eval`` reads ``state["population"]["ratings"]``; ``Ratings(config).load_state_dict(...)`` then
``table()`` gives the leaderboard. Ratings of snapshots that have left the pool stay in the table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialRecord
from arena.populations.matchmaking import LearnerSeat, Matchup, default_matchups
from arena.populations.pool import MemberKind, OpponentPool, PoolMember
from arena.populations.ratings import Ratings
from arena.populations.settings import PFSPConfig, PopulationConfig

_SCORES = {"win": 1.0, "draw": 0.5, "loss": 0.0}


def snapshot_name(learner: str, iteration: int) -> str:
    return f"{learner}@it{iteration}"


class Population:
    """Learners, their opponent pool and the population's ratings.

    ``learners`` are ``(name, live seat spec)`` pairs; ``opponents`` the run config's training pool as
    ``(seat spec, weight)`` pairs, each becoming a member named by its spec (kind ``model`` for ``model:…``
    specs, ``scripted`` otherwise). With ``learners_as_opponents`` every learner is also a member (kind
    ``learner``, named by the learner) that the other learners draw with ``learner_weight``.
    """

    def __init__(
        self,
        config: PopulationConfig,
        learners: Sequence[tuple[str, str]],
        opponents: Sequence[tuple[str, float]],
        seed: int,
        task_pool: int = 0,
        players: int = 2,
    ) -> None:
        self.config = config
        self.seed = seed
        #: The arena's seats: with more than two, each group fills the other seats from the pool too.
        self.players = players
        #: Group seeds drawn from this many recurring tasks (0: a fresh seed per group); see ``default_matchups``.
        self.task_pool = task_pool
        self.learners: dict[str, str] = {}
        for name, spec in learners:
            if name in self.learners:
                raise ArenaError(f"two learners are named {name!r}; learner names must be unique")
            self.learners[name] = spec
        if not self.learners:
            raise ArenaError("a population needs at least one learner")
        self.pool = OpponentPool(learner_specs=self.learners)
        for spec, weight in opponents:
            if spec in self.pool:
                raise ArenaError(f"opponent {spec!r} is listed twice in the training pool")
            if spec in self.learners:
                raise ArenaError(f"opponent {spec!r} has the name of a learner")
            kind: MemberKind = "model" if spec.startswith("model:") else "scripted"
            self.pool.add(PoolMember(name=spec, spec=spec, weight=float(weight), kind=kind))
        if config.learners_as_opponents:
            for name, spec in self.learners.items():
                self.pool.add(
                    PoolMember(name=name, spec=spec, weight=config.learner_weight, kind="learner", owner=name)
                )
        self.ratings = Ratings(config.ratings)
        for name in [*self.learners, *self.pool.members]:
            if name not in self.ratings:
                self.ratings.add(name)
        #: Snapshots the last ``evolve`` pushed out of the pool (for logs).
        self.last_dropped: list[PoolMember] = []
        # Fail at start-up, not at the first iteration, when a learner has nobody to play. An empty pool is a
        # single-agent run (the learner alone on each task); ``Run`` checks that the arena has one seat.
        for name in self.learners if self.pool.members else ():
            self.pool.sampling_weights(name, PFSPConfig())

    @property
    def pfsp(self) -> PFSPConfig:
        return self.config.pfsp

    # -- per iteration ------------------------------------------------------------------------------------------

    def matchups(self, iteration: int, groups: int, learner_seat: LearnerSeat) -> list[Matchup]:
        """``groups`` matchups for every learner (learners in config order); see ``default_matchups``."""
        return default_matchups(
            self.pool,
            list(self.learners),
            iteration,
            groups,
            learner_seat,
            self.seed,
            self.pfsp,
            self.task_pool,
            self.players,
            draw=self.config.opponent_draw,
        )

    def learner_seat_index(self, trial: TrialRecord, learner: str) -> int:
        """The learner's seat: ``meta["learner_seat"]`` when set, else the one seat holding its live spec."""
        index = trial.spec.meta.get("learner_seat")
        if index is not None:
            if not isinstance(index, int) or not 0 <= index < len(trial.spec.seats):
                raise ArenaError(f"trial {trial.spec.trial_id}: learner_seat {index!r} is not a seat index")
            return index
        spec = self.learners[learner]
        seats = [i for i, s in enumerate(trial.spec.seats) if s == spec]
        if len(seats) != 1:
            raise ArenaError(
                f"trial {trial.spec.trial_id}: learner {learner!r} ({spec}) holds {len(seats)} seats of "
                f"{list(trial.spec.seats)}; set meta['learner_seat'] to say which is the learner"
            )
        return seats[0]

    def record(self, trial: TrialRecord) -> None:
        """Count a finished trial: ``meta["learner"]`` against ``meta["opponent"]``, scored by the learner's
        outcome in the final episode (win 1, draw 0.5, loss 0). Trials without both keys are ignored.

        The opponent must be a pool member, or a rated player that has left the pool (a dropped snapshot: then
        only the ratings change). When the opponent is another live learner, that learner's record against
        this one (if it is a member) is updated too, from its side.
        """
        meta = trial.spec.meta
        learner, opponent = meta.get("learner"), meta.get("opponent")
        if learner is None or opponent is None:
            return
        if learner not in self.learners:
            raise ArenaError(f"trial {trial.spec.trial_id}: {learner!r} is not a learner of this population")
        if opponent not in self.pool and opponent not in self.ratings:
            raise ArenaError(f"trial {trial.spec.trial_id}: opponent {opponent!r} is not in the population")
        agent = list(trial.final.returns)[self.learner_seat_index(trial, learner)]
        score = _SCORES[trial.final.outcomes[agent]]
        if opponent in self.pool:
            self.pool.record(learner, opponent, score)
            member = self.pool.members[opponent]
            if member.kind == "learner" and member.owner in self.learners and learner in self.pool:
                self.pool.record(member.owner, learner, 1.0 - score)
        if len(trial.spec.seats) > 2:
            players, scores = self.match_players(trial, learner, opponent)
            self.ratings.record_match(players, scores)
        else:
            self.ratings.record(learner, opponent, score)

    def match_players(self, trial: TrialRecord, learner: str, opponent: str) -> tuple[list[str], list[float]]:
        """The rated players of a trial with more than two seats, and their final-episode returns.

        The learner's seat is the learner; every other seat is named by ``meta["seat_names"]`` when the trial
        has it (one name per seat, the learner's included), else by the pool member with that seat spec
        (``opponent`` first, ``meta["opponent"]``), else by the spec itself. A player holding several seats plays
        once, with the mean of its seats' returns.
        """
        agents = list(trial.final.returns)
        names = trial.spec.meta.get("seat_names")
        if names is not None and (not isinstance(names, list | tuple) or len(names) != len(trial.spec.seats)):
            raise ArenaError(f"trial {trial.spec.trial_id}: meta['seat_names'] must name every seat, got {names!r}")
        index = self.learner_seat_index(trial, learner)
        by_spec: dict[str, str] = {}
        for member in self.pool.members.values():
            by_spec.setdefault(member.spec, member.name)
        if opponent in self.pool:
            by_spec[self.pool.members[opponent].spec] = opponent
        returns: dict[str, list[float]] = {}
        for i, spec in enumerate(trial.spec.seats):
            if i == index:
                name = learner
            elif names is not None:
                name = str(names[i])
            else:
                name = by_spec.get(spec, spec)
            returns.setdefault(name, []).append(float(trial.final.returns[agents[i]]))
        return list(returns), [sum(r) / len(r) for r in returns.values()]

    def evolve(self, iteration: int, snapshot: Callable[[str], str]) -> list[PoolMember]:
        """Every ``snapshot_every`` iterations (``iteration`` counted from 1 after the update), add a snapshot
        of each learner: ``snapshot(learner)`` saves a frozen copy and returns its seat spec. The snapshot starts
        at its learner's current ratings; the owner's oldest snapshots beyond ``max_snapshots`` leave the pool
        (they are in ``last_dropped``). Returns the added members, learners in config order.
        """
        self.last_dropped = []
        every = self.config.snapshot_every
        if every <= 0 or iteration <= 0 or iteration % every:
            return []
        added = []
        for learner, live_spec in self.learners.items():
            name = snapshot_name(learner, iteration)
            if name in self.pool or name in self.ratings:
                raise ArenaError(f"snapshot {name!r} already exists; evolve ran twice for iteration {iteration}")
            spec = snapshot(learner)
            if spec == live_spec:
                raise ArenaError(
                    f"snapshot {name!r} has the live seat spec {spec!r} of its learner; a snapshot "
                    "must be a frozen copy with its own spec"
                )
            member = PoolMember(
                name=name,
                spec=spec,
                weight=self.config.snapshot_weight,
                kind="snapshot",
                owner=learner,
                added_at=iteration,
            )
            self.last_dropped.extend(self.pool.add_snapshot(member, self.config.max_snapshots))
            self.ratings.add(name, self.ratings.rating(learner))
            added.append(member)
        return added

    # -- reports ------------------------------------------------------------------------------------------------

    def ratings_table(self) -> list[dict[str, Any]]:
        """``Ratings.table()``: every rated player, best conservative rating first."""
        return self.ratings.table()

    def summary(self) -> dict[str, Any]:
        """For logs: the members, and for each learner each eligible member's probability and its record.

        ``{"members": [PoolMember fields...], "learners": {learner: [{"member", "probability", "games", "wins",
        "draws", "losses", "win_rate", "score"}...]}}``; ``win_rate`` and ``score`` (draws count half) are
        ``None`` before the first game.
        """
        learners: dict[str, list[dict[str, Any]]] = {}
        for learner in self.learners:
            rows = []
            weights = self.pool.sampling_weights(learner, self.pfsp) if self.pool.members else {}
            for name, p in weights.items():
                s = self.pool.stats(learner, name)
                rows.append(
                    {
                        "member": name,
                        "probability": p,
                        "games": s.games,
                        "wins": s.wins,
                        "draws": s.draws,
                        "losses": s.losses,
                        "win_rate": s.wins / s.games if s.games else None,
                        "score": (s.wins + 0.5 * s.draws) / s.games if s.games else None,
                    }
                )
            learners[learner] = rows
        return {"members": [attrs.asdict(m) for m in self.pool.members.values()], "learners": learners}

    # -- state --------------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state that restores matchmaking exactly (format in the module docstring)."""
        return {
            "version": 1,
            "learners": dict(self.learners),
            "pool": self.pool.state_dict(),
            "ratings": self.ratings.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore pool members, statistics and ratings. The learners must be the config's learners (by name);
        their live seat specs are taken from the config, since the live seats are this run's."""
        if not isinstance(state, dict) or state.get("version") != 1:
            raise ArenaError("population state is not a version-1 population state")
        saved = list(state.get("learners") or {})
        if saved != list(self.learners):
            raise ArenaError(f"the saved population has learners {saved}, the config has {list(self.learners)}")
        self.pool.load_state_dict(state["pool"])
        self.pool.learner_specs = dict(self.learners)
        for name, member in list(self.pool.members.items()):
            if member.kind == "learner" and member.owner in self.learners:
                self.pool.members[name] = attrs.evolve(member, spec=self.learners[member.owner])
        self.ratings.load_state_dict(state["ratings"])
        self.last_dropped = []
