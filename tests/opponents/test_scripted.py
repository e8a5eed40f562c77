"""Tic-tac-toe cell-preference players, rock-paper-scissors opponents and the random opponent."""

from __future__ import annotations

import numpy as np
import pyspiel
import pytest

from arena.arenas.opponents.builtin_plugin import builtin_opponents, random_factory
from arena.arenas.opponents.simple import TTT_PREFERENCES, beats
from arena.core.api.arena import SeatView
from arena.core.api.errors import ArenaError

FACTORIES = {name: factory for name, factory, _, _ in builtin_opponents()}
R, P, S = 0, 1, 2


def ttt_state(*cells: int) -> pyspiel.State:
    state = pyspiel.load_game("tic_tac_toe").new_initial_state()
    for cell in cells:
        state.apply_action(cell)
    return state


def test_six_distinct_permutations() -> None:
    assert len(TTT_PREFERENCES) == 6
    assert len(set(TTT_PREFERENCES.values())) == 6
    assert all(sorted(order) == list(range(9)) for order in TTT_PREFERENCES.values())


@pytest.mark.parametrize("name", sorted(TTT_PREFERENCES))
def test_preference_player_takes_first_empty_preferred_cell(spiel_view, name: str) -> None:
    order = TTT_PREFERENCES[name]
    opponent = FACTORIES[name]("tic_tac_toe", None, 0)
    assert opponent.act(spiel_view(ttt_state())) == order[0]
    # Fill the first preferred cells one by one (moves alternate between the preferred cells and other cells).
    occupied = [order[0], order[-1], order[1], order[-2]]
    state = ttt_state(*occupied)
    assert opponent.act(spiel_view(state)) == order[2]
    # Play a whole game against itself: every move is the first empty cell of the order.
    state = ttt_state()
    while not state.is_terminal():
        expected = next(c for c in order if c in state.legal_actions())
        action = opponent.act(spiel_view(state))
        assert action == expected
        state.apply_action(action)


def test_named_orders() -> None:
    assert TTT_PREFERENCES["ttt-center"][0] == 4
    assert TTT_PREFERENCES["ttt-corners"][:4] == (0, 2, 6, 8)
    assert TTT_PREFERENCES["ttt-edges"][:4] == (1, 3, 5, 7)
    assert TTT_PREFERENCES["ttt-row-major"] == tuple(range(9))
    assert TTT_PREFERENCES["ttt-col-major"][:3] == (0, 3, 6)
    assert TTT_PREFERENCES["ttt-anti-diagonal"][:3] == (2, 4, 6)


def test_beats() -> None:
    assert [beats(m) for m in (R, P, S)] == [P, S, R]


def test_rps_rock_and_cycle(rps_view) -> None:
    rock = FACTORIES["rps-rock"]("rock_paper_scissors", None, 0)
    cycle = FACTORIES["rps-cycle"]("rock_paper_scissors", None, 0)
    for n in range(7):
        view = rps_view([S] * n, [P] * n)
        assert rock.act(view) == R
        assert cycle.act(view) == [R, P, S][n % 3]


def test_rps_copy_and_beat_last(rps_view) -> None:
    copy = FACTORIES["rps-copy"]("rock_paper_scissors", None, 0)
    beat_last = FACTORIES["rps-beat-last"]("rock_paper_scissors", None, 0)
    assert copy.act(rps_view([R, R], [P, S])) == S
    assert beat_last.act(rps_view([R, R], [P, S])) == R
    assert beat_last.act(rps_view([S], [R])) == P
    # The first move is random: over many fresh seeds all three moves appear.
    for name in ("rps-copy", "rps-beat-last"):
        firsts = {FACTORIES[name]("rock_paper_scissors", None, seed).act(rps_view([], [])) for seed in range(30)}
        assert firsts == {R, P, S}


def test_rps_frequency(rps_view) -> None:
    freq = FACTORIES["rps-frequency"]("rock_paper_scissors", None, 0)
    assert freq.act(rps_view([R, R, R, R], [S, R, S, P])) == R  # scissors most frequent → rock
    assert freq.act(rps_view([R, R, R], [P, P, R])) == S
    # A tie between rock and paper: the answer beats one of them, and both show up across seeds.
    answers = {
        FACTORIES["rps-frequency"]("rock_paper_scissors", None, seed).act(rps_view([S, S], [R, P]))
        for seed in range(30)
    }
    assert answers == {P, S}


def test_rps_only_reads_played_rounds(rps_view) -> None:
    """A full observation (no -1 rows) works, and the -1 rows of a partial one are ignored."""
    cycle = FACTORIES["rps-cycle"]("rock_paper_scissors", None, 0)
    assert cycle.act(rps_view([R, P, S, R], [R, R, R, R], rounds=4)) == P


def test_rps_rejects_a_wrong_observation() -> None:
    view = SeatView(env=None, agent="player_0", seat=0, observation=np.zeros(3), action_mask=np.ones(3))
    with pytest.raises(ArenaError, match=r"shape \(rounds, 2\)"):
        FACTORIES["rps-rock"]("rock_paper_scissors", None, 0).act(view)


def test_random_is_uniform_over_legal_moves(spiel_view) -> None:
    state = ttt_state(4, 0, 8)
    opponent = random_factory("tic_tac_toe", None, 7)
    counts = np.bincount([opponent.act(spiel_view(state)) for _ in range(6000)], minlength=9)
    assert counts[[0, 4, 8]].sum() == 0
    legal = state.legal_actions()
    assert counts[legal].min() > 800


def test_random_without_mask_uses_the_action_space() -> None:
    class Env:
        def action_space(self, agent):
            import gymnasium

            return gymnasium.spaces.Discrete(4)

    view = SeatView(env=Env(), agent="a", seat=0, observation=None, action_mask=None)
    opponent = random_factory("any_env", None, 0)
    assert {opponent.act(view) for _ in range(200)} == {0, 1, 2, 3}


@pytest.mark.parametrize("name", [*sorted(TTT_PREFERENCES), "rps-rock", "rps-frequency"])
def test_scripted_opponents_refuse_arguments_and_other_arenas(name: str) -> None:
    arena = "tic_tac_toe" if name.startswith("ttt") else "rock_paper_scissors"
    with pytest.raises(ArenaError, match="takes no argument"):
        FACTORIES[name](arena, "3", 0)
    with pytest.raises(ArenaError, match=rf"{name!r} does not support arena 'kuhn_poker'; it supports: {arena}"):
        FACTORIES[name]("kuhn_poker", None, 0)
