"""Helpers shared by the built-in opponents: spec parsing, argument and arena checks, pyspiel access.

Every check raises ``ArenaError`` with a one-line message, because a bad opponent spec or an opponent paired
with the wrong arena is a configuration mistake the user fixes, not a bug.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from arena.core.api.arena import SeatView
from arena.core.api.errors import ArenaError

#: pyspiel's C++ seeds are ``int``; larger Python seeds are folded into this range.
_SPIEL_SEED_MOD = 2**31 - 1


def parse_opponent_spec(spec: str) -> tuple[str, str | None]:
    """Split ``"mcts:1000"`` into ``("mcts", "1000")`` and ``"cfr-argmax"`` into ``("cfr-argmax", None)``.

    Only the first colon separates, so an argument may itself contain colons.
    """
    text = spec.strip()
    name, sep, arg = text.partition(":")
    name, arg = name.strip(), arg.strip()
    if not name:
        raise ArenaError(f"opponent spec {spec!r} has no opponent name")
    if not sep:
        return name, None
    if not arg:
        raise ArenaError(f"opponent spec {spec!r} has an empty argument after ':' (write {name!r} or {name}:<arg>)")
    return name, arg


def check_arena(opponent: str, arena_id: str, supported: Iterable[str]) -> None:
    """Refuse an arena the opponent cannot play, naming the arenas it can."""
    names = sorted(supported)
    if arena_id not in names:
        raise ArenaError(f"opponent {opponent!r} does not support arena {arena_id!r}; it supports: {', '.join(names)}")


def check_no_arg(opponent: str, arg: str | None) -> None:
    """Opponents without parameters reject an argument rather than silently ignoring a typo."""
    if arg is not None:
        raise ArenaError(f"opponent {opponent!r} takes no argument, got {opponent}:{arg}")


def positive_int_arg(opponent: str, arg: str | None, default: int, what: str) -> int:
    """Parse the ``N`` of ``name:N`` (a positive integer), or return ``default`` when there is no argument."""
    if arg is None:
        return default
    try:
        value = int(arg)
    except ValueError:
        raise ArenaError(
            f"opponent {opponent!r}: argument {arg!r} is not an integer (write {opponent}:N, N = {what})"
        ) from None
    if value < 1:
        raise ArenaError(f"opponent {opponent!r}: {what} must be at least 1, got {value}")
    return value


def spiel_seed(seed: int) -> int:
    """Fold an arbitrary Python int seed into the non-negative 31-bit range pyspiel's C++ bots accept."""
    return int(seed) % _SPIEL_SEED_MOD


def pyspiel_state(view: SeatView, opponent: str) -> Any:
    """The pyspiel state behind an OpenSpiel (shimmy) arena; solver and search opponents read it directly."""
    state = getattr(getattr(view.env, "unwrapped", view.env), "game_state", None)
    if state is None:
        raise ArenaError(
            f"opponent {opponent!r} needs an OpenSpiel arena (env.unwrapped.game_state), got {type(view.env).__name__}"
        )
    return state


def require_legal(opponent: str, view: SeatView, action: int) -> int:
    """Guard against an opponent answering an illegal move: that would be a bug in it, so fail loudly."""
    legal = view.legal_actions()
    if action not in legal:
        raise RuntimeError(f"opponent {opponent!r} chose illegal action {action} (legal: {legal})")
    return action
