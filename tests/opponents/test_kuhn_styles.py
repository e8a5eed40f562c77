"""MAGE's Kuhn styles at all 12 decision points (3 cards × 4 betting histories), on real pyspiel states."""

from __future__ import annotations

import pyspiel
import pytest

from arena.arenas.opponents.builtin_plugin import builtin_opponents

J, Q, K = 0, 1, 2
P, B = 0, 1
HISTORIES = {"": (), "p": (P,), "b": (B,), "pb": (P, B)}

# style → history → (action with J, with Q, with K)
EXPECTED = {
    "conservative": {"": (P, P, B), "p": (P, P, B), "b": (P, P, B), "pb": (P, P, B)},
    "aggressive": {"": (B, B, B), "p": (B, B, B), "b": (P, B, B), "pb": (P, B, B)},
    "intermediate": {"": (P, B, B), "p": (P, B, B), "b": (P, P, B), "pb": (P, P, B)},
}
CASES = [
    (style, history, card, expected[card])
    for style, expected_by_history in EXPECTED.items()
    for history, expected in expected_by_history.items()
    for card in (J, Q, K)
]


def kuhn_state(card: int, history: str) -> pyspiel.State:
    """The state where the player to move holds ``card`` after the betting ``history``."""
    betting = HISTORIES[history]
    mover = len(betting) % 2
    other = (card + 1) % 3
    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    for dealt in (card, other) if mover == 0 else (other, card):
        state.apply_action(dealt)
    for action in betting:
        state.apply_action(action)
    assert state.current_player() == mover
    assert state.information_state_string(mover) == f"{card}{history}"
    return state


@pytest.mark.parametrize(("style", "history", "card", "expected"), CASES)
def test_style_action(spiel_view, style: str, history: str, card: int, expected: int) -> None:
    factory = next(f for name, f, _, _ in builtin_opponents() if name == style)
    opponent = factory("kuhn_poker", None, 0)
    assert opponent.name == style
    assert opponent.act(spiel_view(kuhn_state(card, history))) == expected


def test_twelve_decision_points_each() -> None:
    assert len(CASES) == 36
