"""Opponents of the issue-24 testbeds: always-paper/always-scissors, the RPS styles' exact move distributions, and
the stochastic Kuhn styles."""

from __future__ import annotations

import itertools

import numpy as np
import pyspiel
import pytest

from arena.arenas.opponents.builtin_plugin import builtin_opponents
from arena.arenas.opponents.kuhn import KUHN_STOCHASTIC_STYLES, bet_probability
from arena.arenas.opponents.simple import RPS_OPPONENTS

FACTORIES = {name: factory for name, factory, _, _ in builtin_opponents()}
R, P, S = 0, 1, 2


@pytest.mark.parametrize(("name", "move"), [("rps-rock", R), ("rps-paper", P), ("rps-scissors", S)])
def test_always_one_move(rps_view, name: str, move: int) -> None:
    opponent = FACTORIES[name]("rock_paper_scissors", None, 3)
    for mine, theirs in [([], []), ([R], [move]), ([S, P], [move, move])]:
        assert opponent.act(rps_view(theirs, mine)) == move


HISTORIES = [[], [(R, P)], [(S, S), (P, R)], [(R, R), (P, S), (S, R)], [(R, P), (R, S)]]


@pytest.mark.parametrize("name", sorted(RPS_OPPONENTS))
@pytest.mark.parametrize("history", HISTORIES, ids=str)
def test_move_probs_is_what_choose_draws(rps_view, name: str, history: list[tuple[int, int]]) -> None:
    # rows are (the opponent's own move, the other's move)
    own = [h[0] for h in history]
    other = [h[1] for h in history]
    probs = RPS_OPPONENTS[name](name, 0).move_probs(np.array(history, dtype=int).reshape(-1, 2))
    assert probs.sum() == pytest.approx(1.0) and (probs >= 0).all()
    n = 600
    draws = [FACTORIES[name]("rock_paper_scissors", None, seed).act(rps_view(own, other)) for seed in range(n)]
    freq = np.bincount(draws, minlength=3) / n
    assert set(np.flatnonzero(freq)) == set(np.flatnonzero(probs))
    assert freq == pytest.approx(probs, abs=0.07)


def _kuhn_state(card: int, history: str) -> pyspiel.State:
    mover = len(history) % 2
    other = (card + 1) % 3
    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    for dealt in (card, other) if mover == 0 else (other, card):
        state.apply_action(dealt)
    for letter in history:
        state.apply_action("pb".index(letter))
    return state


@pytest.mark.parametrize(
    ("name", "card", "history"), list(itertools.product(sorted(KUHN_STOCHASTIC_STYLES), range(3), ["", "p", "b", "pb"]))
)
def test_stochastic_kuhn_styles_bet_with_their_probability(spiel_view, name: str, card: int, history: str) -> None:
    state = _kuhn_state(card, history)
    p = bet_probability(name)(card, history.endswith("b"))
    opponent = FACTORIES[name]("kuhn_poker", None, 11)
    n = 400
    bets = np.mean([opponent.act(spiel_view(state)) for _ in range(n)])
    assert bets == pytest.approx(p, abs=4 * np.sqrt(max(p * (1 - p), 1e-9) / n) + 1e-9)


def test_stochastic_kuhn_styles_as_documented() -> None:
    # The docstring's table of arena.arenas.opponents.kuhn: P(Bet) can bet J/Q/K, facing a bet J/Q/K.
    table = {
        "bluffer": ((1, 0.5, 1), (0, 0, 1)),
        "calling-station": ((0, 0, 0.5), (1, 1, 1)),
        "folder": ((0, 0, 0.5), (0, 0, 1)),
    }
    for name, (can, facing) in table.items():
        assert [bet_probability(name)(c, False) for c in range(3)] == list(can)
        assert [bet_probability(name)(c, True) for c in range(3)] == list(facing)


def test_stochastic_kuhn_styles_repeat_with_their_seed(spiel_view) -> None:
    state = _kuhn_state(1, "")  # the bluffer's Queen: a coin flip
    a = FACTORIES["bluffer"]("kuhn_poker", None, 5)
    b = FACTORIES["bluffer"]("kuhn_poker", None, 5)
    first = [a.act(spiel_view(state)) for _ in range(30)]
    assert first == [b.act(spiel_view(state)) for _ in range(30)]
    assert len(set(first)) == 2  # and it does flip
