"""MAGE's Kuhn styles at all 12 decision points (3 cards × 4 betting histories), on real pyspiel states."""

from __future__ import annotations

import itertools

import pyspiel
import pytest

from arena.arenas.opponents.builtin_plugin import builtin_opponents
from arena.arenas.opponents.kuhn import KUHN_STYLES, deal_for_seed, winnable
from arena.core.host import catalog

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


def spiel_winnable(spiel_view, cards: tuple[int, int], seat: int, style: str) -> bool:
    """``winnable`` again, by walking real pyspiel states with the opponent object playing the other seat."""
    factory = next(f for name, f, _, _ in builtin_opponents() if name == style)
    opponent = factory("kuhn_poker", None, 0)

    def wins(state: pyspiel.State) -> bool:
        if state.is_terminal():
            return state.returns()[seat] > 0
        if state.current_player() != seat:
            return wins(state.child(opponent.act(spiel_view(state.clone()))))
        return any(wins(state.child(action)) for action in state.legal_actions())

    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    for card in cards:
        state.apply_action(card)
    return wins(state)


@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_winnable_agrees_with_pyspiel_on_every_deal_and_seat(spiel_view, style: str) -> None:
    for cards in itertools.permutations((J, Q, K), 2):
        for seat in (0, 1):
            expected = spiel_winnable(spiel_view, cards, seat, style)
            assert winnable(cards, seat, KUHN_STYLES[style]) == expected, (cards, seat)


def test_winnable_shares_and_cases() -> None:
    deals = [(cards, seat) for cards in itertools.permutations((J, Q, K), 2) for seat in (0, 1)]
    share = {name: sum(winnable(c, s, style) for c, s in deals) / 12 for name, style in KUHN_STYLES.items()}
    # conservative: lost only to a King; aggressive: won only with the higher card; intermediate: between.
    assert share == pytest.approx({"conservative": 8 / 12, "aggressive": 6 / 12, "intermediate": 7 / 12})
    assert winnable((J, Q), 0, KUHN_STYLES["conservative"])  # bluff: the Queen folds to a bet
    assert not winnable((J, K), 0, KUHN_STYLES["conservative"])
    assert not winnable((J, Q), 0, KUHN_STYLES["aggressive"])  # the Queen calls
    assert winnable((Q, J), 1, KUHN_STYLES["intermediate"]) is False  # the Queen bets first; the Jack must fold


def test_deal_for_seed_is_the_arena_deal() -> None:
    make = catalog.arenas().get("kuhn_poker").factory
    for seed in range(6):
        env = make()
        env.reset(seed=seed)
        assert deal_for_seed(seed) == tuple(env.unwrapped.game_state.history()[:2])


@pytest.mark.parametrize("style", sorted(EXPECTED))
def test_a_fixed_policy_wins_every_winnable_deal(style: str) -> None:
    """Knowing the deal does not help against a style: some policy that ignores it wins every winnable deal, so a
    repeated deal leaves no room for within-trial gains above the best fixed policy (docs/evaluation.md)."""
    play = KUHN_STYLES[style]
    for seat in (0, 1):
        spots = [(card, facing) for card in (J, Q, K) for facing in (False, True)]
        deals = list(itertools.permutations((J, Q, K), 2))
        best = 0
        for actions in itertools.product((P, B), repeat=len(spots)):
            policy = dict(zip(spots, actions, strict=True))
            best = max(best, sum(fixed_policy_wins(cards, seat, policy, play) for cards in deals))
        assert best == sum(winnable(cards, seat, play) for cards in deals)


def fixed_policy_wins(cards: tuple[int, int], seat: int, policy: dict, style) -> bool:
    """Play one deal: the learner answers from ``policy[(card, facing a bet)]``, the other seat from ``style``."""
    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    for card in cards:
        state.apply_action(card)
    while not state.is_terminal():
        mover = state.current_player()
        facing = len(state.history()) > 2 and state.history()[-1] == B
        state.apply_action(policy[(cards[mover], facing)] if mover == seat else style(cards[mover], facing))
    return state.returns()[seat] > 0
