"""Registers every TextArena game as an arena ``textarena:ID`` and the ``textarena-random`` opponent.

Installed with the package (entry point ``builtin-textarena``) but inert without TextArena: the game list is read
from TextArena's registry module, so nothing is registered when the ``textarena`` extra is absent, and importing
TextArena itself waits until a game is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.arenas.textarena_env import TextArenaEnv, TextArenaGame, TextArenaRandom, textarena_games
from arena.core.api.arena import Opponent
from arena.core.api.errors import ArenaError
from arena.core.api.markers import hookimpl

PREFIX = "textarena:"


def textarena_factory(game: TextArenaGame) -> Callable[..., TextArenaEnv]:
    """A factory for one game: ``players``, ``error_allowance`` and the TextArena env's own keyword arguments."""

    def factory(**kwargs: Any) -> TextArenaEnv:
        return TextArenaEnv(game, **kwargs)

    factory.__name__ = f"make_textarena_{game.env_id}"
    return factory


def _players(game: TextArenaGame) -> str:
    if game.min_players == game.max_players:
        return f"{game.min_players} player" + ("s" if game.min_players > 1 else "")
    return f"{game.min_players}-{game.max_players} players"


@hookimpl
def register_arenas(register: Callable[..., None]) -> None:
    for game in textarena_games():
        register(
            game.arena_id,
            textarena_factory(game),
            description=f"TextArena's {game.env_id} ({_players(game)}); free-text bracketed moves.",
            source=f"textarena:{game.env_id}",
        )


def textarena_random(arena_id: str, arg: str | None, seed: int) -> Opponent:
    if not arena_id.startswith(PREFIX):
        raise ArenaError(f"opponent 'textarena-random' plays TextArena arenas (textarena:ID), not {arena_id!r}")
    if arg is not None:
        raise ArenaError(f"opponent 'textarena-random' takes no argument (got {arg!r})")
    return TextArenaRandom(seed)


@hookimpl
def register_opponents(register: Callable[..., None]) -> None:
    games = textarena_games()
    if not games:  # without TextArena there is nothing it could play
        return
    register(
        "textarena-random",
        textarena_random,
        arenas=tuple(game.arena_id for game in games),
        description="a uniformly random move among those a TextArena game lists as available now",
    )
