"""Arenas: PettingZoo environments, their text adapters and their opponents.

``make(arena_id, **kwargs)`` builds any arena an installed plugin registered (built-ins included); it is
``arena.core.host.catalog.make_arena`` under the name users of Gymnasium and PettingZoo expect.
"""

from arena.core.host.catalog import ArenaInfo, api_kind, describe, list_arenas
from arena.core.host.catalog import make_arena as make

__all__ = ["ArenaInfo", "api_kind", "describe", "list_arenas", "make"]
