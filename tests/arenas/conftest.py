"""Fixtures for arena tests: the built-in factories as the plugin registers them, and seat views of live envs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from arena.arenas import builtin_plugin
from arena.core.api.arena import SeatView


@pytest.fixture(scope="session")
def factories() -> dict[str, Callable[..., Any]]:
    """Factories collected through ``register_arenas`` with a fake ``register``, as the plugin manager would."""
    collected: dict[str, Callable[..., Any]] = {}

    def register(name: str, factory: Callable[..., Any], **meta: Any) -> None:
        assert name not in collected, f"{name} registered twice"
        assert meta.get("description") and meta.get("source"), f"{name} lacks description/source"
        collected[name] = factory

    builtin_plugin.register_arenas(register)
    return collected


@pytest.fixture(scope="session")
def view_of() -> Callable[[Any], SeatView]:
    """``view_of(env)``: the SeatView of an AEC env's selected agent, built the way the engine builds it."""

    def make(env: Any) -> SeatView:
        agent = env.agent_selection
        obs, _, _, _, info = env.last()
        mask = info.get("action_mask")
        return SeatView(
            env=env,
            agent=agent,
            seat=env.possible_agents.index(agent),
            observation=obs,
            action_mask=None if mask is None else np.asarray(mask),
            info=dict(info),
        )

    return make


@pytest.fixture(scope="session")
def play() -> Callable[..., None]:
    """``play(env, actions)``: step an AEC env through ``actions`` (ids), checking each is legal."""

    def run(env: Any, actions: list[int]) -> None:
        for action in actions:
            _, _, term, trunc, info = env.last()
            assert not (term or trunc), "game ended before all actions were played"
            assert info["action_mask"][action], f"action {action} is not legal"
            env.step(action)

    return run
