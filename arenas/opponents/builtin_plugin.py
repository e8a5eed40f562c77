"""The built-in opponents, registered through the ``register_opponents`` hook.

Each factory has the signature ``factory(arena_id, arg, seed) -> Opponent`` (``arg`` is the text after the colon
of a spec such as ``mcts:1000``). A factory refuses arenas it cannot play with an ``ArenaError`` naming the
opponent, the arena and the arenas it supports; ``arenas=None`` in the registration means any arena.

Registered ids: ``random`` (any arena); ``mcts[:N]`` (tic_tac_toe, connect_four); ``conservative``,
``aggressive``, ``intermediate``, ``bluffer``, ``calling-station``, ``folder`` (kuhn_poker); ``cfr[:N]``,
``cfr-argmax[:N]`` (kuhn_poker, leduc_poker);
``ttt-corners``, ``ttt-center``, ``ttt-edges``, ``ttt-row-major``, ``ttt-col-major``, ``ttt-anti-diagonal``
(tic_tac_toe); ``rps-rock``, ``rps-paper``, ``rps-scissors``, ``rps-cycle``, ``rps-copy``, ``rps-beat-last``,
``rps-frequency`` (rock_paper_scissors).
"""

from __future__ import annotations

from collections.abc import Callable

from arena.arenas.opponents._common import check_arena, check_no_arg, parse_opponent_spec, positive_int_arg
from arena.arenas.opponents.cfr import CFR_ARENAS, DEFAULT_ITERATIONS, CfrOpponent
from arena.arenas.opponents.kuhn import (
    KUHN_STOCHASTIC_STYLES,
    KUHN_STYLES,
    KuhnStochasticOpponent,
    KuhnStyleOpponent,
)
from arena.arenas.opponents.mcts import DEFAULT_SIMULATIONS, MCTS_ARENAS, MctsOpponent
from arena.arenas.opponents.simple import RPS_OPPONENTS, TTT_PREFERENCES, CellPreferenceOpponent, RandomOpponent
from arena.core.api.arena import Opponent, OpponentFactory
from arena.core.api.errors import ArenaError
from arena.core.api.markers import hookimpl

__all__ = ["builtin_opponents", "parse_opponent_spec", "register_opponents"]

KUHN_ARENAS = ("kuhn_poker",)
TTT_ARENAS = ("tic_tac_toe",)
RPS_ARENAS = ("rock_paper_scissors",)


def random_factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
    check_no_arg("random", arg)
    return RandomOpponent(seed)


def mcts_factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
    check_arena("mcts", arena_id, MCTS_ARENAS)
    simulations = positive_int_arg("mcts", arg, DEFAULT_SIMULATIONS, "the number of simulations")
    return MctsOpponent(f"mcts:{simulations}", simulations, seed)


def _cfr_factory(name: str, argmax: bool) -> OpponentFactory:
    def factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
        check_arena(name, arena_id, CFR_ARENAS)
        iterations = positive_int_arg(name, arg, DEFAULT_ITERATIONS[arena_id], "the number of CFR+ iterations")
        return CfrOpponent(name, seed=seed, argmax=argmax, iterations=iterations)

    factory.__doc__ = f"Factory of the {name!r} opponent."
    return factory


def _kuhn_factory(name: str) -> OpponentFactory:
    def factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
        check_arena(name, arena_id, KUHN_ARENAS)
        check_no_arg(name, arg)
        return KuhnStyleOpponent(name, KUHN_STYLES[name])

    return factory


def _kuhn_stochastic_factory(name: str) -> OpponentFactory:
    def factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
        check_arena(name, arena_id, KUHN_ARENAS)
        check_no_arg(name, arg)
        return KuhnStochasticOpponent(name, KUHN_STOCHASTIC_STYLES[name], seed)

    return factory


def _ttt_factory(name: str) -> OpponentFactory:
    def factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
        check_arena(name, arena_id, TTT_ARENAS)
        check_no_arg(name, arg)
        return CellPreferenceOpponent(name, TTT_PREFERENCES[name])

    return factory


def _rps_factory(name: str) -> OpponentFactory:
    def factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
        check_arena(name, arena_id, RPS_ARENAS)
        check_no_arg(name, arg)
        return RPS_OPPONENTS[name](name, seed)

    return factory


_KUHN_DESCRIPTIONS = {
    "conservative": "Kuhn (MAGE): bet/call only with the King, otherwise pass/fold",
    "aggressive": "Kuhn (MAGE): always bet; facing a bet, call unless holding the Jack",
    "intermediate": "Kuhn (MAGE): King bets/calls, Jack passes/folds, Queen bets but folds to a bet",
    "bluffer": "Kuhn (stochastic): bets every King and Jack, half its Queens; folds to a bet unless King",
    "calling-station": "Kuhn (stochastic): never folds; bets half of its Kings, checks the rest",
    "folder": "Kuhn (stochastic): folds to a bet unless King; bets half of its Kings, checks the rest",
}
_RPS_DESCRIPTIONS = {
    "rps-rock": "always rock",
    "rps-paper": "always paper",
    "rps-scissors": "always scissors",
    "rps-cycle": "rock, paper, scissors in turn",
    "rps-copy": "plays the other's previous move (first move random)",
    "rps-beat-last": "plays what beats the other's previous move (first move random)",
    "rps-frequency": "beats the other's most frequent move so far (ties random)",
}


def _maze_explorer_factory(arena_id: str, arg: str | None, seed: int) -> Opponent:
    from arena.arenas.text_maze import TextMazeExplorer

    check_arena("text_maze-explorer", arena_id, ("text_maze",))
    if arg not in (None, "no-note", "hindsight"):
        raise ArenaError(f"opponent 'text_maze-explorer' takes no argument, ':no-note' or ':hindsight', got {arg!r}")
    # hindsight: told the treasure's chest, never reads the note (SAFARI's hindsight-biased demonstrator)
    return TextMazeExplorer(read_notes=arg != "no-note", hindsight=arg == "hindsight")


def builtin_opponents() -> list[tuple[str, OpponentFactory, tuple[str, ...] | None, str]]:
    """(id, factory, arenas, description) of every built-in opponent; ``arenas=None`` means any arena."""
    table: list[tuple[str, OpponentFactory, tuple[str, ...] | None, str]] = [
        ("random", random_factory, None, "uniform over legal moves"),
        ("mcts", mcts_factory, MCTS_ARENAS, f"OpenSpiel MCTS, mcts:N simulations (default {DEFAULT_SIMULATIONS})"),
        ("cfr", _cfr_factory("cfr", False), CFR_ARENAS, "CFR+ average strategy, sampled; cfr:N iterations"),
        (
            "cfr-argmax",
            _cfr_factory("cfr-argmax", True),
            CFR_ARENAS,
            "argmax of the CFR+ average strategy (lowest action on ties); cfr-argmax:N iterations",
        ),
    ]
    table += [(name, _kuhn_factory(name), KUHN_ARENAS, _KUHN_DESCRIPTIONS[name]) for name in KUHN_STYLES]
    table += [
        (name, _kuhn_stochastic_factory(name), KUHN_ARENAS, _KUHN_DESCRIPTIONS[name]) for name in KUHN_STOCHASTIC_STYLES
    ]
    table += [
        (name, _ttt_factory(name), TTT_ARENAS, f"tic-tac-toe: first empty cell in the order {list(order)}")
        for name, order in TTT_PREFERENCES.items()
    ]
    table += [(name, _rps_factory(name), RPS_ARENAS, _RPS_DESCRIPTIONS[name]) for name in RPS_OPPONENTS]
    table.append(
        (
            "text_maze-explorer",
            _maze_explorer_factory,
            ("text_maze",),
            "text maze expert: explores everything it has seen, reads the note (text_maze-explorer:no-note "
            "skips it; :hindsight is told the chest and never reads it)",
        )
    )
    return table


#: Registration meta beyond arenas and description. ``strength_arg`` (the argument's default) marks an argument
#: that sets a strength: ``mcts:1000`` is another player than ``mcts:100`` (MAGE holds MCTS-1000 out of a pool
#: with MCTS-100), where any other opponent under another argument counts as the same player for the check
#: that a run's unseen opponents stay out of its training pool (``arena.core.learn.unseen``).
EXTRA_META: dict[str, dict[str, object]] = {"mcts": {"strength_arg": DEFAULT_SIMULATIONS}}


@hookimpl
def register_opponents(register: Callable[..., None]) -> None:
    for name, factory, arenas, description in builtin_opponents():
        register(name, factory, arenas=arenas, description=description, **EXTRA_META.get(name, {}))
