"""The catalogues of arenas, opponents, backends and models, filled once from every installed plugin.

``make_arena(arena_id, **kwargs)`` builds any arena an installed plugin registered (built-ins included).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs

from arena.core.api.errors import PluginError
from arena.core.host.registry import Registry


@functools.cache
def _registries() -> dict[str, Registry[Any]]:
    from arena.core.host.plugins import registration_manager

    pm = registration_manager()
    registries: dict[str, Registry[Any]] = {
        "arena": Registry("arena"),
        "opponent": Registry("opponent"),
        "backend": Registry("backend"),
        "model": Registry("model"),
    }
    hooks = {
        "arena": "register_arenas",
        "opponent": "register_opponents",
        "backend": "register_backends",
        "model": "register_models",
    }
    for kind, hook in hooks.items():
        caller = getattr(pm.hook, hook)
        for impl in caller.get_hookimpls():
            try:
                impl.function(registries[kind].registrar(impl.plugin_name))
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(
                    f"plugin {impl.plugin_name!r} failed in hook {hook!r}: {type(exc).__name__}: {exc}"
                ) from exc
    return registries


def arenas() -> Registry[Any]:
    return _registries()["arena"]


def opponents() -> Registry[Any]:
    return _registries()["opponent"]


def backends() -> Registry[Any]:
    return _registries()["backend"]


def models() -> Registry[Any]:
    return _registries()["model"]


def reset() -> None:
    _registries.cache_clear()


@attrs.frozen
class ArenaInfo:
    """What ``arena arenas`` lists about one arena."""

    arena_id: str
    api: str
    num_players: int
    source: str
    plugin: str
    description: str


def make_arena(arena_id: str, **kwargs: Any) -> Any:
    """A fresh PettingZoo env (AEC or Parallel) for ``arena_id``; unknown ids raise ``UnknownNameError``."""
    return arenas().get(arena_id).create("arena", **kwargs)


def api_kind(env: Any) -> str:
    from pettingzoo.utils.env import ParallelEnv

    return "parallel" if isinstance(env, ParallelEnv) else "aec"


def describe(arena_id: str) -> ArenaInfo:
    entry = arenas().get(arena_id)
    env = entry.create("arena")
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
    return [describe(name) for name in arenas().names()]
