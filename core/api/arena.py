"""Contracts between arenas, the text adapter, opponents and the rollout engine.

An *arena* is any PettingZoo environment (AEC or Parallel). The engine never reads an environment's
internals: it looks at a seat through a ``SeatView`` and talks to the environment's ``TextAdapter`` (for LLM
seats) or to an ``Opponent`` (for programmatic seats).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np


@attrs.frozen
class Move:
    """One legal move as the model sees it.

    ``action`` is the environment's action id, ``name`` the text shown in the prompt (``"Bet"``,
    ``"(1,2)"``), ``aliases`` other spellings the parser accepts (``"x(1,2)"``, ``"centre"``).
    """

    action: int
    name: str
    aliases: tuple[str, ...] = ()


@attrs.frozen
class ParseResult:
    """What the parser made of an answer: a legal ``action`` or an ``error`` saying why not.

    ``action`` is an action id, or for free-text arenas any action their env accepts (a string of code).
    """

    action: Any
    move: str | None = None
    error: str | None = None

    @property
    def valid(self) -> bool:
        return self.action is not None


@attrs.frozen(eq=False)
class SeatView:
    """One seat's view of the environment at a decision point (or at the end of an episode).

    ``env`` is the PettingZoo env itself (for OpenSpiel arenas ``env.unwrapped.game_state`` is the pyspiel
    state: search- and solver-based opponents read it; text adapters of built-in arenas render it).
    ``action_mask`` is ``None`` when the environment gives none (then every action of the space is legal).
    ``seat`` is the index of ``agent`` in ``env.possible_agents``.
    """

    env: Any
    agent: str
    seat: int
    observation: Any
    action_mask: np.ndarray | None
    info: dict[str, Any] = attrs.field(factory=dict)

    def legal_actions(self) -> list[int]:
        if self.action_mask is not None:
            return [int(a) for a in np.flatnonzero(np.asarray(self.action_mask))]
        space = self.env.action_space(self.agent)
        return list(range(int(space.n)))


@runtime_checkable
class TextAdapter(Protocol):
    """Renders a seat's view as text and names moves. Parsing answers is shared:
    ``arena.core.rollout.text_adapter.parse_action``.

    Built-in arenas set ``env.unwrapped.arena_text_adapter`` to their adapter; any other env gets the generic
    renderer (``arena.core.rollout.text_adapter.GenericTextAdapter``), which needs a Discrete action space.
    """

    def rules(self, view: SeatView) -> str:
        """The game's rules and which player this seat is; constant within an episode."""
        ...

    def observation(self, view: SeatView) -> str:
        """What this seat sees now (own cards, board, betting so far)."""
        ...

    def legal_moves(self, view: SeatView) -> list[Move]:
        """The legal moves now, in action-id order."""
        ...

    def action_name(self, view: SeatView, action: int) -> str:
        """A short name for ``action`` taken at ``view`` (used in step histories, also for other seats)."""
        ...

    def episode_summary(self, view: SeatView) -> str:
        """The end of an episode from this seat's side: outcome and anything revealed (showdown cards)."""
        ...

    # Optional methods, looked up with getattr by the engine (not part of the runtime check):
    #
    # ``parse_answer(view, answer: str) -> ParseResult``: free-text arenas (coding) turn the whole answer into
    #     an env action themselves; ``legal_moves`` then returns [] and no move list is shown.
    # ``answer_format(view) -> str``: the prompt's closing instruction for such arenas ("Write the function in
    #     one ```python block.") instead of "give exactly one legal move as <action>MOVE</action>".
    # ``episode_details(view) -> dict``: JSON-serialisable facts about the finished episode, stored in
    #     ``EpisodeRecord.details[agent]``; conventional keys ``task_id``, ``score``, ``outcome_key``.
    # ``all_moves(view) -> list[Move]``: the whole action space, so an illegal move is told from no move.


@runtime_checkable
class Opponent(Protocol):
    """A programmatic seat: scripted, random, search or solver based. Created per seat per trial, seeded.

    Factories registered through ``register_opponents`` have the signature
    ``factory(arena_id: str, arg: str | None, seed: int) -> Opponent``; ``arg`` is the text after the colon of
    a spec such as ``mcts:1000``.
    """

    name: str

    def act(self, view: SeatView) -> int:
        """Return a legal action id for ``view``; in a free-text arena (its adapter has ``parse_answer``, as
        TextArena's games do) the env's own action, a string, which the env judges."""
        ...


class OpponentFactory(Protocol):
    def __call__(self, arena_id: str, arg: str | None, seed: int) -> Opponent: ...


def moves_by_action(moves: Sequence[Move]) -> dict[int, Move]:
    return {m.action: m for m in moves}
