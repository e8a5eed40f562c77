"""MAGE's scripted Kuhn poker styles, read straight from the pyspiel state.

OpenSpiel Kuhn poker: cards 0 = Jack, 1 = Queen, 2 = King; actions 0 = Pass (check or fold), 1 = Bet (bet or
call). The first two moves of ``state.history()`` are the chance deals (player 0's card, then player 1's); the
rest is the betting. A player *faces a bet* when the last betting move is a Bet.

The three styles, exactly as MAGE defines them:

* ``conservative``: bet or call only with the King, otherwise pass or fold.
* ``aggressive``: always bet; facing a bet, call unless holding the Jack.
* ``intermediate``: the King bets and calls, the Jack passes and folds, the Queen bets unless facing a bet,
  in which case it folds.

Three stochastic exploitable styles (issue 24; each decision draws once from the opponent's seeded generator, so a
trial's episodes, which repeat the deal, do not repeat the draws). "Can bet" means no bet to face (first to act, or
after a check); "facing a bet" means a Bet is the last betting move. Probabilities are of Bet (bet or call):

==================== ========================== ===========================
style                can bet: J / Q / K         facing a bet: J / Q / K
==================== ========================== ===========================
``bluffer``          1 / 1/2 / 1                0 / 0 / 1
``calling-station``  0 / 0 / 1/2                1 / 1 / 1
``folder``           0 / 0 / 1/2                0 / 0 / 1
==================== ========================== ===========================

* ``bluffer``: bets every King and every Jack (a bluff) and half of its Queens; gives up (folds) to a bet unless it
  holds the King. Exploited by calling its bets with the Queen and by betting into it.
* ``calling-station``: never folds; bets only half of its Kings. Exploited by value-betting, never by bluffing.
* ``folder``: folds everything but the King to a bet; bets half of its Kings. Exploited by betting every card.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import pyspiel

from arena.arenas.opponents._common import pyspiel_state, require_legal
from arena.core.api.arena import SeatView

JACK, QUEEN, KING = 0, 1, 2
PASS, BET = 0, 1

#: A style maps (own card, facing a bet) to an action.
Style = Callable[[int, bool], int]


def conservative(card: int, facing_bet: bool) -> int:
    return BET if card == KING else PASS


def aggressive(card: int, facing_bet: bool) -> int:
    if facing_bet:
        return PASS if card == JACK else BET
    return BET


def intermediate(card: int, facing_bet: bool) -> int:
    if card == KING:
        return BET
    if card == JACK:
        return PASS
    return PASS if facing_bet else BET


KUHN_STYLES: dict[str, Style] = {
    "conservative": conservative,
    "aggressive": aggressive,
    "intermediate": intermediate,
}


#: A stochastic style maps (own card, facing a bet) to the probability of Bet.
BetProbability = Callable[[int, bool], float]


def bluffer(card: int, facing_bet: bool) -> float:
    if facing_bet:
        return 1.0 if card == KING else 0.0
    return 0.5 if card == QUEEN else 1.0


def calling_station(card: int, facing_bet: bool) -> float:
    if facing_bet:
        return 1.0
    return 0.5 if card == KING else 0.0


def folder(card: int, facing_bet: bool) -> float:
    if facing_bet:
        return 1.0 if card == KING else 0.0
    return 0.5 if card == KING else 0.0


KUHN_STOCHASTIC_STYLES: dict[str, BetProbability] = {
    "bluffer": bluffer,
    "calling-station": calling_station,
    "folder": folder,
}


def bet_probability(name: str) -> BetProbability:
    """The probability of Bet of any Kuhn style by name, deterministic (0 or 1) or stochastic."""
    if name in KUHN_STOCHASTIC_STYLES:
        return KUHN_STOCHASTIC_STYLES[name]
    style = KUHN_STYLES[name]
    return lambda card, facing_bet: float(style(card, facing_bet) == BET)


def kuhn_decision(state: object, player: int) -> tuple[int, bool]:
    """(own card, facing a bet) for ``player`` at a pyspiel Kuhn poker decision node."""
    history = list(state.history())  # type: ignore[attr-defined]
    card = int(history[player])
    betting = history[2:]
    return card, bool(betting) and betting[-1] == BET


class KuhnStyleOpponent:
    """A deterministic Kuhn poker player following one of MAGE's three styles."""

    def __init__(self, name: str, style: Style) -> None:
        self.name = name
        self._style = style

    def act(self, view: SeatView) -> int:
        card, facing_bet = kuhn_decision(pyspiel_state(view, self.name), view.seat)
        return require_legal(self.name, view, self._style(card, facing_bet))


class KuhnStochasticOpponent:
    """A Kuhn poker player that bets with a style's probability, one draw of its seeded generator per decision."""

    def __init__(self, name: str, bet_prob: BetProbability, seed: int) -> None:
        self.name = name
        self._bet_prob = bet_prob
        self._rng = np.random.default_rng(seed)

    def act(self, view: SeatView) -> int:
        card, facing_bet = kuhn_decision(pyspiel_state(view, self.name), view.seat)
        action = BET if self._rng.random() < self._bet_prob(card, facing_bet) else PASS
        return require_legal(self.name, view, action)


# -- the ceiling of a trial against a style ----------------------------------------------------------------------
#
# A style is deterministic and a trial repeats its deal, so whether the learner can win an episode is fixed by the
# deal and its seat. No policy, adaptive or not, wins an episode whose deal no line of play wins; the fraction of
# winnable deals is therefore the ceiling of every episode's win rate (MAGE's code prints it as "upper bound").


def winnable(cards: tuple[int, int], seat: int, style: Style) -> bool:
    """Whether some line of play wins the deal ``cards`` (player 0's, player 1's) from ``seat`` against ``style``."""

    def wins(state: Any) -> bool:
        if state.is_terminal():
            return bool(state.returns()[seat] > 0)
        player = state.current_player()
        if player != seat:
            return wins(state.child(style(*kuhn_decision(state, player))))
        return any(wins(state.child(action)) for action in state.legal_actions())

    root = pyspiel.load_game("kuhn_poker").new_initial_state()
    for card in cards:
        root.apply_action(card)
    return wins(root)


@functools.cache  # an evaluation asks for each seed once per seat and opponent
def deal_for_seed(seed: int) -> tuple[int, int]:
    """The cards (player 0's, player 1's) of the built-in ``kuhn_poker`` arena's deal for ``seed``."""
    from arena.arenas.openspiel_arenas import OpenSpielArena

    env = OpenSpielArena("kuhn_poker")
    env.reset(seed=seed)
    history = list(env.game_state.history())
    return int(history[0]), int(history[1])
