"""Registers the backends that ship with arena."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.backends.scripted import ScriptedBackend
from arena.core.markers import hookimpl


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    register("scripted", ScriptedBackend, description="deterministic fake LLM: random legal moves (tests, demos)")


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    register(
        "scripted",
        lambda: "scripted",
        default_backend="scripted",
        description="no weights: the scripted backend's random legal answers",
    )
