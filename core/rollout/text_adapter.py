"""Turning a model's free-text answer into an action, and the generic text renderer for any Discrete env.

Models rarely answer in exactly the requested format, so ``parse_action`` is deliberately lenient: a wrong
format should cost the model a reprompt only when the intended move is genuinely unclear. It never raises,
because the rollout engine feeds it arbitrary generations.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from arena.core.api.arena import Move, ParseResult, SeatView, TextAdapter
from arena.core.api.errors import ArenaError

__all__ = [
    "GenericTextAdapter",
    "action_mask_of",
    "adapter_for",
    "format_moves",
    "normalise",
    "parse_action",
    "render_value",
]

_OPEN_TAG = re.compile(r"<\s*action\s*>", re.IGNORECASE)
_CLOSE_TAG = re.compile(r"<\s*/\s*action\s*>", re.IGNORECASE)
_INTEGER = re.compile(r"[+-]?\d+")
_LISTING = re.compile(r"(\d+):(.+)")
# Characters a model wraps its answer in (quotes, markdown, brackets) and punctuation it ends a sentence with.
_WRAPPERS = "\"'`“”‘’*_[](){}<>"
_TRAILING = ".!?,;:"
_SPACE_AROUND_PUNCT = re.compile(r"\s*([,()\-×:/])\s*")


def normalise(text: str) -> str:
    """Case-fold, collapse whitespace, drop wrapping quotes/brackets and trailing punctuation.

    Applied to both the answer and the move names, so a name such as ``"(1,2)"`` still matches itself even though
    its brackets are stripped.
    """
    s = " ".join(text.lower().split())
    s = _SPACE_AROUND_PUNCT.sub(r"\1", s)
    previous = None
    while s != previous:
        previous = s
        s = s.strip().strip(_WRAPPERS).rstrip(_TRAILING)
    return s


def _candidate(answer: str) -> str:
    """The text inside the last ``<action>`` tag (closed, or unclosed at the end), else the whole answer."""
    opens = list(_OPEN_TAG.finditer(answer))
    if not opens:
        return answer
    for opening in reversed(opens):
        rest = answer[opening.end() :]
        closing = _CLOSE_TAG.search(rest)
        content = rest[: closing.start()] if closing else rest
        if content.strip() or closing:
            return content
    return answer[opens[-1].end() :]


def _spellings(move: Move) -> list[str]:
    return [move.name, *move.aliases]


def _word_pattern(spelling: str) -> re.Pattern[str] | None:
    """A whole-word, case-insensitive pattern; lookarounds instead of ``\\b`` so names like ``(1,2)`` work."""
    words = spelling.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def parse_action(answer: str, moves: Sequence[Move], all_moves: Sequence[Move] = ()) -> ParseResult:
    """Map ``answer`` to one of the legal ``moves``; an invalid ``ParseResult`` (never an exception) otherwise.

    Order of precedence: exact (normalised) name or alias of a legal move; a bare integer as an action id; an
    exact name of a move that exists (``all_moves``) but is not legal now; finally the legal move mentioned last
    as a whole word anywhere in the candidate text (models tend to reason first and decide at the end).
    """
    try:
        return _parse(answer, moves, all_moves)
    except Exception as exc:  # defensive: a parser bug must cost a reprompt, not a crashed rollout
        return ParseResult(action=None, error=f"could not parse answer ({type(exc).__name__})")


def _parse(answer: str, moves: Sequence[Move], all_moves: Sequence[Move]) -> ParseResult:
    if not isinstance(answer, str) or not answer.strip():
        return ParseResult(action=None, error="empty answer")
    raw = _candidate(answer)
    cand = normalise(raw)
    if not cand:
        return ParseResult(action=None, error="empty answer")

    for move in moves:
        if any(normalise(s) == cand for s in _spellings(move)):
            return ParseResult(action=move.action, move=move.name)

    listed = _LISTING.fullmatch(cand)  # the model copied a line of the move listing, e.g. "1: Bet"
    if listed:
        for move in moves:
            if any(normalise(s) == listed.group(2) for s in _spellings(move)):
                return ParseResult(action=move.action, move=move.name)
        cand = listed.group(1)

    if _INTEGER.fullmatch(cand):
        number = int(cand)
        for move in moves:
            if move.action == number:
                return ParseResult(action=move.action, move=move.name)
        return ParseResult(action=None, error=f"illegal action {number}")

    legal_ids = {m.action for m in moves}
    for move in all_moves:
        if move.action not in legal_ids and any(normalise(s) == cand for s in _spellings(move)):
            return ParseResult(action=None, move=move.name, error=f"illegal move {move.name!r}")

    found = _last_mentioned(raw, moves, all_moves)
    if found is not None:
        return ParseResult(action=found.action, move=found.name)
    return ParseResult(action=None, error="no legal move found in answer")


def _mentions(text: str, moves: Sequence[Move], *, numeric: bool) -> list[tuple[int, int, Move]]:
    """Whole-word mentions ``(start, end, move)`` of the moves' numeric (or non-numeric) spellings."""
    found: list[tuple[int, int, Move]] = []
    for move in moves:
        for spelling in _spellings(move):
            if (_INTEGER.fullmatch(spelling.strip()) is not None) != numeric:
                continue
            pattern = _word_pattern(spelling)
            if pattern is not None:
                found.extend((m.start(), m.end(), move) for m in pattern.finditer(text))
    return found


def _last_mentioned(text: str, moves: Sequence[Move], all_moves: Sequence[Move]) -> Move | None:
    """The legal move whose whole-word mention in ``text`` starts last.

    Longer mentions shadow the ones inside them (``(1,1)`` is not also a mention of cell ``1``). Purely numeric
    spellings are a second pass, used only when no move is named: numbers in prose ("I see 3 options", the digits
    of an occupied cell ``(0,1)``) are weak evidence next to a name.
    """
    named = _mentions(text, moves, numeric=False)
    if named:
        candidates, blocked = named, []
    else:
        candidates = _mentions(text, moves, numeric=True)
        blocked = [(s, e) for s, e, _ in _mentions(text, [*moves, *all_moves], numeric=False)]
    kept: list[tuple[int, int, Move]] = []
    for start, end, move in sorted(candidates, key=lambda m: m[0] - m[1]):  # longest first
        spans = blocked + [(s, e) for s, e, _ in kept]
        if all(end <= s or start >= e for s, e in spans):
            kept.append((start, end, move))
    if not kept:
        return None
    return max(kept, key=lambda m: (m[0], m[1]))[2]


def format_moves(moves: Sequence[Move]) -> str:
    """One ``"<action id>: <name>"`` line per move, the listing prompts show."""
    return "\n".join(f"{m.action}: {m.name}" for m in moves)


def render_value(value: Any, indent: str = "") -> str:
    """A compact, readable rendering of an observation: arrays without numpy's noise, dicts key by key."""
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=3, suppress_small=True, separator=" ", max_line_width=120)
    if isinstance(value, Mapping):
        lines = []
        for key, item in value.items():
            text = render_value(item, indent + "  ")
            if "\n" in text:
                lines.append(f"{indent}{key}:\n" + "\n".join(indent + "  " + line for line in text.splitlines()))
            else:
                lines.append(f"{indent}{key}: {text}")
        return "\n".join(lines)
    if isinstance(value, list | tuple):
        return render_value(np.asarray(value)) if value and _is_numeric(value) else repr(value)
    return str(value)


def _is_numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in values)


def action_mask_of(observation: Any, info: Mapping[str, Any] | None) -> np.ndarray | None:
    """The PettingZoo conventions for masks: ``observation["action_mask"]``, else ``info["action_mask"]``."""
    if isinstance(observation, Mapping) and "action_mask" in observation:
        return np.asarray(observation["action_mask"])
    if info and "action_mask" in info:
        return np.asarray(info["action_mask"])
    return None


def final_reward(env: Any, agent: str) -> float | None:
    """The seat's cumulative reward if the env still holds it (AEC envs pop finished agents)."""
    for holder in (env, getattr(env, "unwrapped", None)):
        if holder is None:
            continue
        for attr in ("_cumulative_rewards", "rewards"):
            table = getattr(holder, attr, None)
            if isinstance(table, Mapping) and agent in table:
                return float(table[agent])
    return None


class GenericTextAdapter:
    """Text for an env that ships no adapter: the raw observation, rendered readably, and numbered moves.

    It knows nothing about the game, so the moves are just action ids; that is enough for a model to play (badly)
    and lets any Discrete PettingZoo env join an arena without code.
    """

    def rules(self, view: SeatView) -> str:
        name = _env_name(view.env)
        return (
            f"This is a generic environment ({name}) with no game-specific description. "
            f"You play as {view.agent} (seat {view.seat}). Each turn you see your observation and the legal moves; "
            "answer with the move number."
        )

    def observation(self, view: SeatView) -> str:
        obs = view.observation
        if isinstance(obs, Mapping):
            obs = {k: v for k, v in obs.items() if k != "action_mask"}
        return render_value(obs)

    def legal_moves(self, view: SeatView) -> list[Move]:
        mask = view.action_mask
        if mask is None:
            mask = action_mask_of(view.observation, view.info)
        if mask is not None:
            actions = [int(a) for a in np.flatnonzero(np.asarray(mask))]
        else:
            actions = list(range(int(view.env.action_space(view.agent).n)))
        return [Move(a, str(a), (f"action {a}",)) for a in actions]

    def action_name(self, view: SeatView, action: int) -> str:
        return f"action {action}"

    def episode_summary(self, view: SeatView) -> str:
        reward = final_reward(view.env, view.agent)
        if reward is None:
            return "The episode is over."
        return f"The episode is over. Your final cumulative reward: {reward:g}."


def _env_name(env: Any) -> str:
    metadata = getattr(env, "metadata", None) or {}
    return str(metadata.get("name") or type(getattr(env, "unwrapped", env)).__name__)


def adapter_for(env: Any) -> TextAdapter:
    """The env's own adapter (``env.unwrapped.arena_text_adapter``) or the generic one when actions are Discrete."""
    unwrapped = getattr(env, "unwrapped", env)
    adapter = getattr(unwrapped, "arena_text_adapter", None)
    if adapter is not None:
        return adapter
    agents = list(getattr(env, "possible_agents", None) or [])
    offending = [a for a in agents if not isinstance(env.action_space(a), spaces.Discrete)]
    if not agents or offending:
        space = env.action_space(offending[0]) if offending else None
        raise ArenaError(
            f"environment {_env_name(env)!r} has no text adapter and its action space {space!r} is not Discrete; "
            "set env.unwrapped.arena_text_adapter to a TextAdapter to play it with an LLM"
        )
    return GenericTextAdapter()
