"""The catalogues of arenas, opponents and backends, filled once from every installed plugin."""

from __future__ import annotations

import functools
from typing import Any

from arena.core.errors import PluginError
from arena.core.registry import Registry


@functools.cache
def _registries() -> dict[str, Registry[Any]]:
    from arena.core.plugins import registration_manager

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
