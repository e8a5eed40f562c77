"""Fixtures that build ``SeatView``s for opponent tests without going through the rollout engine.

OpenSpiel views wrap a real shimmy env whose ``game_state`` is swapped for the pyspiel state under test, so
opponents see exactly what they see in an arena; rock-paper-scissors views are hand-made observations that
follow the RPS contract documented in ``arena.arenas.opponents.simple``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
import shimmy

from arena.core.api.arena import SeatView


class SpielViews:
    """``views(state)`` → the ``SeatView`` of the player to move in ``state`` (one shimmy env per game)."""

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}

    def env(self, game_name: str) -> Any:
        if game_name not in self._envs:
            self._envs[game_name] = shimmy.OpenSpielCompatibilityV0(game_name=game_name)
        return self._envs[game_name]

    def __call__(self, state: Any, player: int | None = None) -> SeatView:
        player = state.current_player() if player is None else player
        game = state.get_game()
        env = self.env(game.get_type().short_name)
        env.unwrapped.game_state = state
        mask = np.zeros(game.num_distinct_actions(), dtype=np.int8)
        mask[state.legal_actions(player)] = 1
        return SeatView(
            env=env,
            agent=f"player_{player}",
            seat=player,
            observation=None,
            action_mask=mask,
        )


@pytest.fixture(scope="session")
def spiel_view() -> SpielViews:
    return SpielViews()


def make_rps_view(own: Sequence[int], other: Sequence[int], rounds: int = 10) -> SeatView:
    """A rock-paper-scissors view after the given rounds: rows (own, other), ``-1`` for rounds not played."""
    obs = np.full((rounds, 2), -1, dtype=np.int64)
    for i, (a, b) in enumerate(zip(own, other, strict=True)):
        obs[i] = (a, b)
    return SeatView(env=None, agent="player_1", seat=1, observation=obs, action_mask=np.ones(3, dtype=np.int8))


@pytest.fixture
def rps_view() -> Callable[..., SeatView]:
    return make_rps_view
