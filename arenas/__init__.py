"""Arenas: PettingZoo environments, their text adapters and their opponents.

``make(arena_id, **kwargs)`` builds any arena an installed plugin registered (built-ins included).
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class ArenaInfo:
    """What ``arena arenas`` lists about one arena."""

    arena_id: str
    api: str
    num_players: int
    source: str
    plugin: str
    description: str


def make(arena_id: str, **kwargs: Any) -> Any:
    """A fresh PettingZoo env (AEC or Parallel) for ``arena_id``; unknown ids raise ``UnknownNameError``."""
    from arena.core import catalog

    entry = catalog.arenas().get(arena_id)
    return entry.factory(**kwargs)


def api_kind(env: Any) -> str:
    from pettingzoo.utils.env import ParallelEnv

    return "parallel" if isinstance(env, ParallelEnv) else "aec"


def describe(arena_id: str) -> ArenaInfo:
    from arena.core import catalog

    entry = catalog.arenas().get(arena_id)
    env = entry.factory()
    try:
        return ArenaInfo(
            arena_id=arena_id,
            api=api_kind(env),
            num_players=len(env.possible_agents),
            source=str(entry.meta.get("source") or entry.plugin),
            plugin=entry.plugin,
            description=str(entry.meta.get("description", "")),
        )
    finally:
        env.close()


def list_arenas() -> list[ArenaInfo]:
    from arena.core import catalog

    return [describe(name) for name in catalog.arenas().names()]
