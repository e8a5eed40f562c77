"""What the one-seat, one-decision testbeds (``doors``, ``vault``, ``menu``) share: a win is finding the prize, and
an adapter reaches its env through any wrapper."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from arena.core.api.arena import SeatView

__all__ = ["FoundIsWin", "env_of"]

E = TypeVar("E")


class FoundIsWin:
    """Mixin for an env with a ``found`` property: the engine's outcome is a win iff the episode found the prize.

    Also the no-op ``render`` and ``close`` of an env that draws nothing and holds nothing open.
    """

    @property
    def found(self) -> bool:
        """Whether this episode found what pays (each env defines it)."""
        raise NotImplementedError

    def arena_outcome(self, returns: Mapping[str, float], agent: str) -> str:
        """Win iff the episode found what pays (``found``); the return alone would say the same here."""
        return "win" if self.found else "loss"

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None


def env_of(view: SeatView, kind: type[E]) -> E:
    """The ``kind`` env under ``view.env`` (unwrapped), or a ``TypeError`` naming both."""
    env = getattr(view.env, "unwrapped", view.env)
    if not isinstance(env, kind):
        raise TypeError(f"this adapter needs a {kind.__name__}, got {type(env).__name__}")
    return env
