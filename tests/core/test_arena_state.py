"""arena_state: a restored snapshot replays the same future (observations, rewards, end) under the same actions."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from arena import arenas
from arena.core.api.errors import ArenaError
from arena.core.rollout.arena_state import restore, snapshot, supports


def _legal(env: Any, agent: str) -> list[int]:
    observation, _, _, _, info = env.last()
    mask = observation.get("action_mask") if isinstance(observation, dict) else None
    if mask is None:
        mask = info["action_mask"]
    return [int(a) for a in np.flatnonzero(mask)]


def _play(env: Any, choices: list[int], limit: int = 200) -> list[tuple[Any, ...]]:
    """Step with the ``choices[i] % len(legal)``-th legal action; record what every seat sees until the end."""
    trace: list[tuple[Any, ...]] = []
    i = 0
    for agent in env.agent_iter(limit):
        observation, reward, termination, truncation, _ = env.last()
        obs = observation["observation"] if isinstance(observation, dict) else observation
        trace.append((agent, np.asarray(obs).tolist(), float(reward), termination, truncation))
        if termination or truncation:
            env.step(None)
            continue
        legal = _legal(env, agent)
        env.step(legal[choices[i % len(choices)] % len(legal)])
        i += 1
    return trace


def _advance(env: Any, choices: list[int]) -> None:
    for choice in choices:
        agent = env.agent_selection
        env.step(_legal(env, agent)[choice % len(_legal(env, agent))])


@pytest.mark.parametrize(
    ("arena_id", "kwargs", "prefix", "future"),
    [
        ("text_maze", {"size": "medium"}, [0, 1, 0, 2], [1, 0, 2, 1, 1, 0, 3, 2, 0, 1]),
        # Leduc deals its public card (a chance node, drawn from the wrapper's generator) after round 1.
        ("leduc_poker", {}, [1], [1, 1, 2, 1, 1]),
        ("tic_tac_toe", {}, [4, 0], [1, 2, 0, 3]),
    ],
)
def test_restore_reproduces_the_future(
    arena_id: str, kwargs: dict[str, Any], prefix: list[int], future: list[int]
) -> None:
    env = arenas.make(arena_id, **kwargs)
    env.reset(seed=11)
    _advance(env, prefix)
    assert supports(env)
    snap = snapshot(env)
    first = _play(env, future)
    assert first and (first[-1][3] or first[-1][4])  # played to the end
    restore(env, snap)
    assert _play(env, future) == first
    # The snapshot survives a restore: a second one, into a fresh env of the same arena, gives the same future.
    other = arenas.make(arena_id, **kwargs)
    other.reset(seed=999)
    restore(other, snap)
    assert _play(other, future) == first


def test_leduc_public_card_comes_from_the_snapshot_generator() -> None:
    """The chance node after round 1 is sampled from the copied generator, not a fresh one."""
    env = arenas.make("leduc_poker")
    env.reset(seed=3)
    snap = snapshot(env)
    _advance(env, [1, 1])  # both call: round 1 over, public card dealt
    card = [h.action for h in env.unwrapped.game_state.full_history()][-1]
    for _ in range(3):
        restore(env, snap)
        _advance(env, [1, 1])
        assert [h.action for h in env.unwrapped.game_state.full_history()][-1] == card


def test_restoring_into_another_arena_fails() -> None:
    maze = arenas.make("text_maze")
    maze.reset(seed=0)
    game = arenas.make("tic_tac_toe")
    game.reset(seed=0)
    with pytest.raises(ArenaError):
        restore(game, snapshot(maze))


def test_unsupported_env_is_an_error() -> None:
    env = arenas.make("rock_paper_scissors")
    assert not supports(env)
    with pytest.raises(ArenaError, match="cannot copy its state"):
        snapshot(env)
