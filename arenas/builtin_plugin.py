"""The built-in arenas, registered through the ``register_arenas`` hook like any third-party plugin.

Each factory takes the arena's parameters as keyword arguments (pyspiel game parameters such as ``players``; for
rock-paper-scissors ``rounds``) and returns a fresh PettingZoo env, so a run config can tweak a game without code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.arenas.openspiel_arenas import OpenSpielArena
from arena.arenas.rps import RockPaperScissorsEnv
from arena.core.api.markers import hookimpl

OPENSPIEL_GAMES: dict[str, str] = {
    "kuhn_poker": "Kuhn poker: three-card poker with one betting round (2+ players).",
    "leduc_poker": "Leduc poker: six-card poker with a public card and two betting rounds (2+ players).",
    "tic_tac_toe": "Tic-tac-toe on a 3x3 board (2 players).",
    "connect_four": "Connect four on a 6x7 board (2 players).",
    "liars_dice": "Liar's dice: bid on everyone's hidden dice or call liar (2 players, 1 die each by default).",
}


def openspiel_factory(game_name: str) -> Callable[..., OpenSpielArena]:
    """A factory whose keyword arguments become the pyspiel game parameters."""

    def factory(**kwargs: Any) -> OpenSpielArena:
        return OpenSpielArena(game_name, config=kwargs or None)

    factory.__name__ = f"make_{game_name}"
    factory.__doc__ = f"Create the OpenSpiel arena {game_name!r}; keyword arguments are pyspiel game parameters."
    return factory


def make_rock_paper_scissors(rounds: int = 5) -> RockPaperScissorsEnv:
    """Create iterated rock-paper-scissors (a ParallelEnv) over ``rounds`` rounds."""
    return RockPaperScissorsEnv(rounds=rounds)


def make_text_maze(**kwargs: Any) -> Any:
    """Create the text maze (``split``, ``size``, ``max_steps``); imported lazily, like any optional arena."""
    from arena.arenas.text_maze import TextMazeEnv

    return TextMazeEnv(**kwargs)


def make_doors(**kwargs: Any) -> Any:
    """Create the doors arena (``doors``, default 10); imported lazily."""
    from arena.arenas.doors import DoorsEnv

    return DoorsEnv(**kwargs)


def make_vault(**kwargs: Any) -> Any:
    """Create the vault arena (``chests``, default 16; ``tasks``, default 0: every seed its own vault); lazy import."""
    from arena.arenas.vault import VaultEnv

    return VaultEnv(**kwargs)


def make_menu(**kwargs: Any) -> Any:
    """Create the menu arena (``plans``, default 5; ``tasks``, default 0: every seed its own menu; ``code_length``,
    default 3); imported lazily."""
    from arena.arenas.menu import MenuEnv

    return MenuEnv(**kwargs)


def make_coding(**kwargs: Any) -> Any:
    """Create the coding arena (``split``, ``tiers``, ``max_attempts``, ``timeout_s``, ``memory_mb``); lazy import."""
    from arena.arenas.coding import CodingEnv

    return CodingEnv(**kwargs)


def make_instruct(**kwargs: Any) -> Any:
    """Create the instruct arena (``split``, ``task_ids``, ``tiers``); imported lazily."""
    from arena.arenas.instruct import InstructEnv

    return InstructEnv(**kwargs)


@hookimpl
def register_arenas(register: Callable[..., None]) -> None:
    for game, description in OPENSPIEL_GAMES.items():
        register(game, openspiel_factory(game), description=description, source=f"open_spiel:{game}")
    register(
        "rock_paper_scissors",
        make_rock_paper_scissors,
        description="Iterated rock-paper-scissors over `rounds` rounds (simultaneous moves, ParallelEnv).",
        source="arena:rps",
    )
    register(
        "text_maze",
        make_text_maze,
        description="Single-agent text maze: keys, locked doors, containers and a note that names the treasure chest.",
        source="arena:text_maze",
    )
    register(
        "doors",
        make_doors,
        description="Single-agent doors: each episode, scout (0, shows the prize door) or open a door (1 if right).",
        source="arena:doors",
    )
    register(
        "vault",
        make_vault,
        description="Single-agent vault: open one of 16 chests (1 if it holds the treasure); then told which one did.",
        source="arena:vault",
    )
    register(
        "menu",
        make_menu,
        description="Single-agent menu: name one of 5 listed plans in <strategy> tags, then its code; one plan pays.",
        source="arena:menu",
    )
    register(
        "coding",
        make_coding,
        description="Single-agent coding: write a Python function to a spec; hidden unit tests (sandboxed) score it.",
        source="arena:coding",
    )
    register(
        "instruct",
        make_instruct,
        description="Single-agent instruction following: a writing request with 1-4 checkable constraints (rubrics).",
        source="arena:instruct",
    )
