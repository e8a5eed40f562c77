"""The OpenSpiel MCTS opponent: strength against random, argument and arena checks."""

from __future__ import annotations

import pyspiel
import pytest

from arena.arenas.opponents.builtin_plugin import mcts_factory, random_factory
from arena.core.api.errors import ArenaError


def test_mcts_1000_never_loses_to_random(spiel_view) -> None:
    """50 tic-tac-toe games, MCTS alternately first and second: no losses (MAGE's 100% non-loss bar)."""
    game = pyspiel.load_game("tic_tac_toe")
    outcomes = {"win": 0, "draw": 0, "loss": 0}
    for i in range(50):
        mcts_seat = i % 2
        players = {mcts_seat: mcts_factory("tic_tac_toe", "1000", i), 1 - mcts_seat: random_factory("x", None, 100 + i)}
        state = game.new_initial_state()
        while not state.is_terminal():
            state.apply_action(players[state.current_player()].act(spiel_view(state)))
        result = state.returns()[mcts_seat]
        outcomes["win" if result > 0 else "loss" if result < 0 else "draw"] += 1
    assert outcomes["loss"] == 0, outcomes
    assert outcomes["win"] >= 40, outcomes


def test_mcts_takes_an_immediate_win(spiel_view) -> None:
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    for cell in (0, 3, 1, 4):  # x: 0, 1; o: 3, 4 → x wins at 2
        state.apply_action(cell)
    assert mcts_factory("tic_tac_toe", None, 0).act(spiel_view(state)) == 2


def test_mcts_plays_connect_four(spiel_view) -> None:
    state = pyspiel.load_game("connect_four").new_initial_state()
    opponent = mcts_factory("connect_four", "50", 0)
    assert opponent.name == "mcts:50"
    assert opponent.act(spiel_view(state)) in state.legal_actions()


@pytest.mark.parametrize("arg", ["abc", "0", "-1", "10.5", "1e3"])
def test_bad_simulation_counts_are_refused(arg: str) -> None:
    with pytest.raises(ArenaError, match="'mcts'") as info:
        mcts_factory("tic_tac_toe", arg, 0)
    assert "\n" not in str(info.value)


def test_default_is_100_simulations() -> None:
    assert mcts_factory("tic_tac_toe", None, 0).name == "mcts:100"


def test_imperfect_information_arena_is_refused() -> None:
    with pytest.raises(ArenaError, match=r"'mcts' does not support arena 'kuhn_poker'; it supports: connect_four"):
        mcts_factory("kuhn_poker", None, 0)
