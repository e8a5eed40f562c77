"""Built-in OpenSpiel arenas: shimmy's PettingZoo wrapper plus a readable text adapter per game.

The env stays a plain ``shimmy.OpenSpielCompatibilityV0`` underneath so ``env.unwrapped.game_state`` is the pyspiel
state that search- and solver-based opponents read. The adapters render that state (not shimmy's observation
tensors) because the state carries what a human player would be told: cards, bets, the board.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

import pyspiel
from gymnasium.utils import EzPickle
from shimmy import OpenSpielCompatibilityV0

from arena.core.api.arena import Move, SeatView

__all__ = [
    "ADAPTERS",
    "ConnectFourAdapter",
    "KuhnPokerAdapter",
    "LeducPokerAdapter",
    "LiarsDiceAdapter",
    "OpenSpielAdapter",
    "OpenSpielArena",
    "TicTacToeAdapter",
]

CHANCE = pyspiel.PlayerId.CHANCE
RANK_NAMES = ("Jack", "Queen", "King", "Ace")
SUIT_NAMES = ("spades", "hearts")


def _player(i: int) -> str:
    return f"Player {i}"


def _join(parts: Sequence[str]) -> str:
    return ", ".join(parts) if parts else "(none yet)"


def _rank_name(rank: int) -> str:
    return RANK_NAMES[rank] if 0 <= rank < len(RANK_NAMES) else f"rank {rank}"


class OpenSpielAdapter:
    """Shared machinery: the pyspiel state of a view, moves named per game, outcome from ``returns()``.

    Subclasses name moves (``move``), render the seat's information (``observation``), describe the game
    (``game_rules``) and what the end revealed (``revealed``).
    """

    game_name: ClassVar[str] = ""

    # --- hooks for subclasses -------------------------------------------------------------------------------
    def game_rules(self, state: Any, seat: int) -> str:
        raise NotImplementedError

    def role(self, state: Any, seat: int) -> str:
        return f"You are {_player(seat)}" + (" (first to act)." if seat == 0 else ".")

    def move(self, state: Any, player: int, action: int) -> Move:
        text = state.action_to_string(player, action)
        return Move(action, text)

    def describe(self, state: Any, seat: int) -> str:
        raise NotImplementedError

    def revealed(self, state: Any, seat: int) -> str:
        return ""

    # --- TextAdapter protocol -------------------------------------------------------------------------------
    @staticmethod
    def state_of(view: SeatView) -> Any:
        return view.env.unwrapped.game_state

    def rules(self, view: SeatView) -> str:
        state = self.state_of(view)
        return f"{self.game_rules(state, view.seat)}\n{self.role(state, view.seat)}"

    def observation(self, view: SeatView) -> str:
        return self.describe(self.state_of(view), view.seat)

    def legal_moves(self, view: SeatView) -> list[Move]:
        state = self.state_of(view)
        if state.is_terminal():
            return []
        return [self.move(state, view.seat, a) for a in state.legal_actions(view.seat)]

    def all_moves(self, view: SeatView) -> list[Move]:
        """Every action of the game named as if this seat played it now; lets the parser say "illegal move"."""
        state = self.state_of(view)
        return [self.move(state, view.seat, a) for a in range(state.get_game().num_distinct_actions())]

    def action_name(self, view: SeatView, action: int) -> str:
        state = self.state_of(view)
        player = state.current_player()
        return self.move(state, player if player >= 0 else view.seat, action).name

    def episode_summary(self, view: SeatView) -> str:
        state = self.state_of(view)
        if not state.is_terminal():
            return "The game ended before a result (truncated)."
        returns = state.returns()
        mine = returns[view.seat]
        outcome = "You won" if mine > 0 else "You lost" if mine < 0 else "It was a draw"
        scores = ", ".join(f"{_player(i)} {r:+g}" for i, r in enumerate(returns))
        lines = [f"{outcome} (returns: {scores})."]
        revealed = self.revealed(state, view.seat)
        if revealed:
            lines.append(revealed)
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------------------------
# Kuhn poker


class KuhnPokerAdapter(OpenSpielAdapter):
    """Kuhn poker: one private card, one betting round of Pass/Bet; pass after a bet is a fold."""

    game_name = "kuhn_poker"

    @staticmethod
    def _deal_and_bets(state: Any) -> tuple[list[int], list[tuple[int, int]]]:
        n = state.get_game().num_players()
        cards: list[int] = []
        bets: list[tuple[int, int]] = []
        for item in state.full_history():
            if item.player == CHANCE and len(cards) < n:
                cards.append(item.action)
            elif item.player >= 0:
                bets.append((item.player, item.action))
        return cards, bets

    def game_rules(self, state: Any, seat: int) -> str:
        n = state.get_game().num_players()
        deck = ", ".join(_rank_name(r) for r in range(n + 1))
        return (
            f"Kuhn poker, {n} players. The deck is {deck} (low to high); each player antes 1 chip and gets one "
            "private card. One betting round: on your turn you Pass or Bet 1 chip. Before anyone bets, Pass means "
            "check; after a bet, Pass means fold and Bet means call. If nobody bets, or bets are called, the highest "
            "card among players still in wins the pot. Your reward is the chips you win or lose."
        )

    def move(self, state: Any, player: int, action: int) -> Move:
        _, bets = self._deal_and_bets(state)
        facing = any(a == 1 for _, a in bets)
        if action == 0:
            return Move(0, "Pass", ("fold",) if facing else ("check",))
        return Move(1, "Bet", ("call",) if facing else ("raise",))

    @staticmethod
    def _words(bets: list[tuple[int, int]]) -> list[str]:
        words, bet_made = [], False
        for player, action in bets:
            if action == 1:
                words.append(f"{_player(player)} {'bet (called)' if bet_made else 'bet'}")
                bet_made = True
            else:
                words.append(f"{_player(player)} {'passed (folded)' if bet_made else 'passed'}")
        return words

    def describe(self, state: Any, seat: int) -> str:
        cards, bets = self._deal_and_bets(state)
        n = state.get_game().num_players()
        pot = n + sum(a for _, a in bets)
        lines = [f"Your card: {_rank_name(cards[seat])}." if seat < len(cards) else "Cards are not dealt yet."]
        lines.append(f"Betting so far: {_join(self._words(bets))}.")
        lines.append(f"Pot: {pot} chips.")
        if not state.is_terminal() and state.current_player() == seat:
            if any(a == 1 for _, a in bets):
                lines.append("You face a bet: Pass folds, Bet calls (1 more chip).")
            else:
                lines.append("No bet yet: Pass checks, Bet puts in 1 more chip.")
        return "\n".join(lines)

    def revealed(self, state: Any, seat: int) -> str:
        cards, bets = self._deal_and_bets(state)
        folded, bet_made = set(), False
        for player, action in bets:
            if action == 1:
                bet_made = True
            elif bet_made:
                folded.add(player)
        history = f"Betting: {_join(self._words(bets))}."
        live = [p for p in range(len(cards)) if p not in folded]
        if len(live) >= 2:
            shown = ", ".join(f"{_player(p)} had {_rank_name(cards[p])}" for p in live)
            return f"{history}\nShowdown: {shown}."
        return f"{history}\nNo showdown (the others folded); your card was {_rank_name(cards[seat])}."


# ------------------------------------------------------------------------------------------------------------
# Leduc poker


class LeducPokerAdapter(OpenSpielAdapter):
    """Leduc poker: private card, a public card after round 1, Fold/Call/Raise with fixed raise sizes."""

    game_name = "leduc_poker"
    _INFO_FIELD = re.compile(r"\[(Pot|Money): ([\d ]+)\]")

    @staticmethod
    def card_name(card: int) -> str:
        return f"{_rank_name(card // 2)} of {SUIT_NAMES[card % 2]}"

    @staticmethod
    def _parse(state: Any) -> tuple[list[int], int | None, list[list[tuple[int, int]]]]:
        """Private cards by player, the public card, and (player, action) by betting round."""
        n = state.get_game().num_players()
        private: list[int] = []
        public: int | None = None
        rounds: list[list[tuple[int, int]]] = [[]]
        for item in state.full_history():
            if item.player == CHANCE:
                if len(private) < n:
                    private.append(item.action)
                else:
                    public = item.action
                    rounds.append([])
            else:
                rounds[-1].append((item.player, item.action))
        return private, public, rounds

    def game_rules(self, state: Any, seat: int) -> str:
        n = state.get_game().num_players()
        ranks = ", ".join(_rank_name(r) for r in range(n + 1))
        return (
            f"Leduc poker, {n} players. The deck has two suits ({' and '.join(SUIT_NAMES)}) of {ranks} (low to high). "
            "Each player antes 1 chip and gets one private card. Round 1 is a betting round; then one public card "
            "is dealt and round 2 is a betting round. On your turn: Fold (give up), Call (match the current bet; "
            "with nothing to match it is a check) or Raise (by 2 chips in round 1, 4 in round 2; at most 2 raises per "
            "round). At the showdown a pair with the public card beats everything, otherwise the higher private card "
            "wins; equal ranks split the pot. Your reward is the chips you win or lose."
        )

    def role(self, state: Any, seat: int) -> str:
        first = int(state.get_game().get_parameters().get("starting_player", 0))
        return f"You are {_player(seat)}" + (" (first to act)." if seat == first else ".")

    def move(self, state: Any, player: int, action: int) -> Move:
        facing = 0 in state.legal_actions() if not state.is_terminal() else True
        if action == 0:
            return Move(0, "Fold", ("give up",))
        if action == 1:
            return Move(1, "Call", () if facing else ("check",))
        if action == 2:
            return Move(2, "Raise", ("bet",))
        return Move(action, state.action_to_string(player, action))

    @staticmethod
    def _words(actions: list[tuple[int, int]]) -> str:
        verbs = {0: "folded", 1: "called", 2: "raised"}
        return _join([f"{_player(p)} {verbs.get(a, f'took action {a}')}" for p, a in actions])

    def describe(self, state: Any, seat: int) -> str:
        private, public, rounds = self._parse(state)
        lines = [f"Your private card: {self.card_name(private[seat])}." if seat < len(private) else "No cards yet."]
        if public is None:
            lines.append("Public card: not dealt yet (it comes after round 1).")
        else:
            lines.append(f"Public card: {self.card_name(public)}.")
        lines.append(f"Round {len(rounds)} of 2.")
        if not state.is_terminal():
            fields = dict(self._INFO_FIELD.findall(state.information_state_string(seat)))
            if "Pot" in fields:
                lines.append(f"Pot: {fields['Pot'].strip()} chips.")
            if "Money" in fields:
                money = fields["Money"].split()
                left = ", ".join(f"{'you' if i == seat else _player(i)} {m}" for i, m in enumerate(money) if m.strip())
                lines.append(f"Chips left: {left}.")
        for i, actions in enumerate(rounds, start=1):
            lines.append(f"Round {i} betting: {self._words(actions)}.")
        return "\n".join(lines)

    def revealed(self, state: Any, seat: int) -> str:
        private, public, rounds = self._parse(state)
        folded = {p for actions in rounds for p, a in actions if a == 0}
        live = [p for p in range(len(private)) if p not in folded]
        board = f"Public card: {self.card_name(public)}." if public is not None else "No public card was dealt."
        if len(live) >= 2:
            shown = ", ".join(f"{_player(p)} had {self.card_name(private[p])}" for p in live)
            return f"{board}\nShowdown: {shown}."
        return f"{board}\nNo showdown (the others folded); your card was {self.card_name(private[seat])}."


# ------------------------------------------------------------------------------------------------------------
# Board games


class _BoardAdapter(OpenSpielAdapter):
    marks: ClassVar[tuple[str, str]] = ("x", "o")

    def role(self, state: Any, seat: int) -> str:
        order = " (first to move)" if seat == 0 else ""
        return f"You are {_player(seat)}{order} and play '{self.marks[seat]}'."

    def grid(self, state: Any) -> list[str]:
        return [row for row in str(state).splitlines() if row.strip()]

    def revealed(self, state: Any, seat: int) -> str:
        return "Final board:\n" + self.render_board(state)

    def render_board(self, state: Any) -> str:
        raise NotImplementedError

    def describe(self, state: Any, seat: int) -> str:
        turn = "" if state.is_terminal() else f"\n{_player(state.current_player())} to move."
        return f"Board (you are '{self.marks[seat]}', '.' is empty):\n{self.render_board(state)}{turn}"


class TicTacToeAdapter(_BoardAdapter):
    """Tic-tac-toe on a 3x3 grid; moves are cells ``(row,col)`` counted from 0."""

    game_name = "tic_tac_toe"

    def game_rules(self, state: Any, seat: int) -> str:
        return (
            "Tic-tac-toe on a 3x3 board. Players alternately mark an empty cell; three marks in a row, column or "
            "diagonal win. A full board without a line is a draw. Cells are written (row,col), counted from 0; "
            "cell number = 3*row + col."
        )

    def render_board(self, state: Any) -> str:
        rows = self.grid(state)
        header = "    " + " ".join(str(c) for c in range(len(rows[0]) if rows else 3))
        return "\n".join([header, *(f"{r}   " + " ".join(row) for r, row in enumerate(rows))])

    def move(self, state: Any, player: int, action: int) -> Move:
        row, col = divmod(action, 3)
        raw = state.action_to_string(player, action)
        return Move(action, f"({row},{col})", (raw, str(action), f"row {row} col {col}", f"row {row} column {col}"))


class ConnectFourAdapter(_BoardAdapter):
    """Connect four; a move drops a disc into a column numbered from 0."""

    game_name = "connect_four"

    def game_rules(self, state: Any, seat: int) -> str:
        params = state.get_game().get_parameters()
        rows, cols, k = params.get("rows", 6), params.get("columns", 7), params.get("x_in_row", 4)
        return (
            f"Connect four on a board of {rows} rows and {cols} columns. Players alternately drop a disc into a "
            f"column that is not full; it falls to the lowest empty cell. {k} discs in a row (horizontally, "
            "vertically or diagonally) win; a full board is a draw. Columns are numbered from 0 (left)."
        )

    def render_board(self, state: Any) -> str:
        rows = self.grid(state)
        width = len(rows[0]) if rows else 7
        body = ["  " + " ".join(row) for row in rows]
        return "\n".join([*body, "  " + " ".join(str(c) for c in range(width))])

    def move(self, state: Any, player: int, action: int) -> Move:
        raw = state.action_to_string(player, action)
        return Move(action, f"column {action}", (raw, f"col {action}"))


# ------------------------------------------------------------------------------------------------------------
# Liar's dice


class LiarsDiceAdapter(OpenSpielAdapter):
    """Liar's dice: own dice, bids "Q × F" (at least Q dice show face F, the highest face is wild), or "liar"."""

    game_name = "liars_dice"
    _BID = re.compile(r"^(\d+)-(\d+)$")

    @staticmethod
    def _dice(state: Any) -> list[list[int]]:
        game = state.get_game()
        n = game.num_players()
        per_player = int(game.get_parameters().get("numdice", 1))
        rolls = [item.action + 1 for item in state.full_history() if item.player == CHANCE]
        return [rolls[p * per_player : (p + 1) * per_player] for p in range(n)]

    @staticmethod
    def _bids(state: Any) -> list[tuple[int, int]]:
        return [(item.player, item.action) for item in state.full_history() if item.player >= 0]

    def _bid_words(self, state: Any, player: int, action: int) -> str:
        text = state.action_to_string(player, action)
        bid = self._BID.match(text)
        return f"bid {bid.group(1)} × {bid.group(2)}" if bid else "called liar"

    def game_rules(self, state: Any, seat: int) -> str:
        params = state.get_game().get_parameters()
        n, dice, sides = state.get_game().num_players(), params.get("numdice", 1), params.get("dice_sides", 6)
        return (
            f"Liar's dice, {n} players with {dice} {'die' if dice == 1 else 'dice'} each ({sides}-sided); you see only "
            f"your own dice. Players take turns bidding 'Q × F': at least Q dice among ALL players show face F; "
            f"face {sides} is wild and counts as every face. Each bid must be higher than the last (more dice, or the "
            "same quantity of a higher face). Instead of bidding you may call 'liar' on the last bid: if the bid is "
            "true the caller loses, otherwise the bidder loses (reward +1 to the winner, -1 to the loser)."
        )

    def move(self, state: Any, player: int, action: int) -> Move:
        text = state.action_to_string(player, action)
        bid = self._BID.match(text)
        if not bid:
            return Move(action, "liar", (text, "call liar", "challenge", "call bluff"))
        q, f = bid.groups()
        return Move(action, f"bid {q} × {f}", (text, f"bid {text}", f"{q} × {f}", f"{q} x {f}", f"bid {q} x {f}"))

    def describe(self, state: Any, seat: int) -> str:
        dice = self._dice(state)
        bids = [f"{_player(p)} {self._bid_words(state, p, a)}" for p, a in self._bids(state)]
        own = " ".join(str(d) for d in dice[seat]) if seat < len(dice) else "?"
        lines = [f"Your dice: {own}.", f"Bids so far: {_join(bids)}."]
        if bids and not state.is_terminal():
            lines.append("Bid higher than the last bid or call liar.")
        return "\n".join(lines)

    def revealed(self, state: Any, seat: int) -> str:
        dice = self._dice(state)
        bids = [f"{_player(p)} {self._bid_words(state, p, a)}" for p, a in self._bids(state)]
        shown = "; ".join(f"{_player(p)} had {' '.join(str(d) for d in ds)}" for p, ds in enumerate(dice))
        return f"Bids: {_join(bids)}.\nDice revealed: {shown}."


ADAPTERS: dict[str, type[OpenSpielAdapter]] = {
    cls.game_name: cls
    for cls in (KuhnPokerAdapter, LeducPokerAdapter, TicTacToeAdapter, ConnectFourAdapter, LiarsDiceAdapter)
}


class OpenSpielArena(OpenSpielCompatibilityV0):
    """A built-in OpenSpiel game as a PettingZoo AEC env with ``arena_text_adapter`` set.

    Seeding is shimmy's: ``reset(seed=s)`` recreates ``np_random`` from ``s`` and samples every chance node from it,
    so the same seed gives the same deal whatever was played before. ``config`` is pyspiel's game parameters.
    """

    def __init__(self, game_name: str, config: dict[str, Any] | None = None, render_mode: str | None = None) -> None:
        if game_name not in ADAPTERS:
            raise ValueError(f"no text adapter for OpenSpiel game {game_name!r}; known: {sorted(ADAPTERS)}")
        super().__init__(game_name=game_name, config=dict(config) if config else None, render_mode=render_mode)
        # shimmy records (env, game_name, render_mode) for pickling, which loses the config and does not match this
        # signature; record ours so copies (deepcopy, multiprocessing) rebuild the same game.
        EzPickle.__init__(self, game_name, config, render_mode)
        metadata: dict[str, Any] = dict(OpenSpielCompatibilityV0.metadata)
        self.metadata = {**metadata, "name": f"arena_{game_name}"}
        self.arena_text_adapter = ADAPTERS[game_name]()

    def _update_termination_truncation(self) -> None:
        """End the episode exactly when the pyspiel state is terminal.

        shimmy truncates once its ``game_length`` (which counts chance nodes and starts at 1) exceeds
        ``max_game_length()`` (which counts player moves only): Kuhn poker is cut off after the first bet and long
        liar's dice or Leduc games lose their ending. These games are finite, so truncation is never needed.
        """
        done = bool(self.game_state.is_terminal())
        self.terminations = {a: done for a in self.agents}
        self.truncations = {a: False for a in self.agents}

    def step(self, action: Any) -> None:
        """shimmy's step, except that a dead step (``step(None)`` for a finished agent) credits nobody.

        shimmy removes the finished agent and then re-adds ``self.rewards`` to everyone still listed, so the last
        agent to leave would collect its final reward twice when rewards are summed from ``last()``.
        """
        selected = getattr(self, "agent_selection", None)
        if selected in self.agents and (self.terminations.get(selected) or self.truncations.get(selected)):
            rewards: dict[str, float] = getattr(self, "rewards", {})
            self.rewards = dict.fromkeys(rewards, 0.0)
        super().step(action)

    # shimmy rebuilds every gymnasium space on each step and reset (a third of a Kuhn rollout's time, profiled).
    # The spaces of a loaded game never change, so build them once.
    def _update_observation_spaces(self) -> None:
        if not getattr(self, "_observation_spaces_built", False):
            super()._update_observation_spaces()
            self._observation_spaces_built = True

    def _update_action_spaces(self) -> None:
        if not getattr(self, "_action_spaces_built", False):
            super()._update_action_spaces()
            self._action_spaces_built = True
