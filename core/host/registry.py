"""A named catalogue of factories, filled by the ``register_*`` hooks.

Arenas, opponents, backends and models all use it: a plugin's ``register_arenas(register)`` receives
``Registry.register`` and calls ``register("my_arena", factory, description=...)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import attrs

from arena.core.api.errors import ArenaError, PluginError, UnknownNameError

F = TypeVar("F", bound=Callable[..., Any])


@attrs.frozen
class Entry(Generic[F]):
    """One registered factory and what the registering plugin said about it."""

    name: str
    factory: F
    plugin: str
    meta: dict[str, Any] = attrs.field(factory=dict)

    def create(self, kind: str, **kwargs: Any) -> Any:
        """``factory(**kwargs)``; an exception that is not already a user error becomes a ``PluginError`` naming the
        plugin that registered the factory (a broken third-party arena says whose it is, in one line)."""
        try:
            return self.factory(**kwargs)
        except ArenaError:
            raise
        except Exception as exc:
            raise PluginError(
                f"{kind} {self.name!r} (plugin {self.plugin!r}) failed to build: {type(exc).__name__}: {exc}"
            ) from exc


class Registry(Generic[F]):
    """Factories by name; a second registration of the same name is an error naming both plugins."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[F]] = {}
        self._current_plugin = "?"

    def registrar(self, plugin: str) -> Callable[..., None]:
        """The ``register`` callable handed to one plugin's registration hook."""

        def register(name: str, factory: F, **meta: Any) -> None:
            self.add(name, factory, plugin=plugin, **meta)

        return register

    def add(self, name: str, factory: F, *, plugin: str, **meta: Any) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"plugin {plugin!r} registered a {self.kind} with an invalid name {name!r}")
        if not callable(factory):
            raise PluginError(f"plugin {plugin!r} registered {self.kind} {name!r} with a factory that is not callable")
        if name in self._entries:
            other = self._entries[name].plugin
            raise PluginError(f"{self.kind} {name!r} is registered by both plugin {other!r} and plugin {plugin!r}")
        self._entries[name] = Entry(name=name, factory=factory, plugin=plugin, meta=dict(meta))

    def get(self, name: str) -> Entry[F]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._entries) from None

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[F]]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))

    def names(self) -> list[str]:
        return sorted(self._entries)
