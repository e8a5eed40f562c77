"""Hand-built trial records for the population tests (the real attrs classes, no engine)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from arena.core.api.records import EpisodeRecord, Outcome, TrialRecord, TrialSpec

AGENTS = ("player_0", "player_1")
_RETURN = {"win": 1.0, "draw": 0.0, "loss": -1.0}
_OTHER: dict[Outcome, Outcome] = {"win": "loss", "draw": "draw", "loss": "win"}


def trial(
    seats: Sequence[str],
    first_outcome: Outcome,
    meta: Mapping[str, object] | None = None,
    trial_id: str = "t0",
    earlier: Sequence[Outcome] = (),
) -> TrialRecord:
    """A two-seat trial whose final episode ends with ``first_outcome`` for the first seat.

    ``earlier`` are the first seat's outcomes in the episodes before the final one.
    """
    spec = TrialSpec(trial_id=trial_id, arena_id="kuhn_poker", seats=tuple(seats), seed=3, meta=dict(meta or {}))
    episodes = []
    for index, outcome in enumerate([*earlier, first_outcome]):
        outcomes: dict[str, Outcome] = {AGENTS[0]: outcome, AGENTS[1]: _OTHER[outcome]}
        episodes.append(
            EpisodeRecord(
                trial_id=trial_id,
                index=index,
                seed=3,
                steps=(),
                returns={a: _RETURN[o] for a, o in outcomes.items()},
                outcomes=outcomes,
                invalid_actions=dict.fromkeys(AGENTS, 0),
            )
        )
    return TrialRecord(spec=spec, episodes=tuple(episodes), reflections=())
