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


# -- the ceiling of a trial against a style ----------------------------------------------------------------------
#
# A style is deterministic and a trial repeats its deal, so whether the learner can win an episode is fixed by the
# deal and its seat. No policy, adaptive or not, wins an episode whose deal no line of play wins; the fraction of
# winnable deals is therefore the ceiling of every episode's win rate (MAGE's code prints it as "upper bound").


def _payoff(cards: tuple[int, int], betting: tuple[int, ...], player: int) -> int | None:
    """Player ``player``'s winnings at a terminal betting sequence, or None while the hand goes on."""
    showdown = 1 if cards[player] > cards[1 - player] else -1
    if betting == (PASS, PASS):
        return showdown
    if betting in ((BET, BET), (PASS, BET, BET)):
        return 2 * showdown
    if betting in ((BET, PASS), (PASS, BET, PASS)):
        folder = (len(betting) - 1) % 2
        return 1 if folder != player else -1
    return None


def winnable(cards: tuple[int, int], seat: int, style: Style) -> bool:
    """Whether some line of play wins the deal ``cards`` (player 0's, player 1's) from ``seat`` against ``style``."""

    def wins(betting: tuple[int, ...]) -> bool:
        payoff = _payoff(cards, betting, seat)
        if payoff is not None:
            return payoff > 0
        mover = len(betting) % 2
        if mover != seat:
            facing_bet = bool(betting) and betting[-1] == BET
            return wins((*betting, style(cards[mover], facing_bet)))
        return any(wins((*betting, action)) for action in (PASS, BET))

    return wins(())


def deal_for_seed(seed: int) -> tuple[int, int]:
    """The cards (player 0's, player 1's) of the built-in ``kuhn_poker`` arena's deal for ``seed``."""
    from arena.arenas.openspiel_arenas import OpenSpielArena

    env = OpenSpielArena("kuhn_poker")
    env.reset(seed=seed)
    history = list(env.game_state.history())
    return int(history[0]), int(history[1])
