"""MAGE's scripted Kuhn poker styles, read straight from the pyspiel state.

OpenSpiel Kuhn poker: cards 0 = Jack, 1 = Queen, 2 = King; actions 0 = Pass (check or fold), 1 = Bet (bet or
call). The first two moves of ``state.history()`` are the chance deals (player 0's card, then player 1's); the
rest is the betting. A player *faces a bet* when the last betting move is a Bet.

The three styles, exactly as MAGE defines them:

* ``conservative``: bet or call only with the King, otherwise pass or fold.
* ``aggressive``: always bet; facing a bet, call unless holding the Jack.
* ``intermediate``: the King bets and calls, the Jack passes and folds, the Queen bets unless facing a bet,
  in which case it folds.
"""

from __future__ import annotations

from collections.abc import Callable

from arena.arenas.base import SeatView
from arena.arenas.opponents._common import pyspiel_state, require_legal

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
