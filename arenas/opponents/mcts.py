"""OpenSpiel's C++ MCTS bot as an opponent for perfect-information arenas (tic-tac-toe, Connect Four).

MAGE's tic-tac-toe population uses MCTS with 100 simulations for training and 1000 for evaluation, UCT
constant 1.4 and random rollouts. The C++ bot is fast enough that 1000 simulations per move cost milliseconds.
It searches from a clone of the arena's pyspiel state, so the arena itself is never touched.
"""

from __future__ import annotations

from typing import Any

import pyspiel

from arena.arenas.opponents._common import pyspiel_state, require_legal, spiel_seed
from arena.core.api.arena import SeatView

MCTS_ARENAS: tuple[str, ...] = ("tic_tac_toe", "connect_four")
DEFAULT_SIMULATIONS = 100
UCT_C = 1.4
MAX_MEMORY_MB = 1000


class MctsOpponent:
    """UCT search with one random rollout per leaf, solving proven wins/losses (``solve=True``)."""

    def __init__(self, name: str, simulations: int, seed: int) -> None:
        self.name = name
        self.simulations = simulations
        self.seed = spiel_seed(seed)
        self._bot: Any = None
        self._game: Any = None
        self._evaluator: Any = None  # kept referenced for as long as the bot that uses it

    def _bot_for(self, game: Any) -> Any:
        # Built lazily from the state's own game, so an arena loaded with non-default parameters is searched right.
        if self._bot is None or self._game is None or str(self._game) != str(game):
            self._evaluator = pyspiel.RandomRolloutEvaluator(1, self.seed)
            self._bot = pyspiel.MCTSBot(
                game, self._evaluator, UCT_C, self.simulations, MAX_MEMORY_MB, True, self.seed, False
            )
            self._game = game
        return self._bot

    def act(self, view: SeatView) -> int:
        state = pyspiel_state(view, self.name)
        bot = self._bot_for(state.get_game())
        return require_legal(self.name, view, int(bot.step(state.clone())))
