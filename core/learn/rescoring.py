"""Score a given answer as the answer to an arena's task, without a model: HeRL revisions, GOLF refinements.

The arena is rebuilt from the trial's ``arena_id``, ``arena_kwargs`` and ``seed`` (the same task the group
played), the answer is parsed by the arena's own text adapter exactly as the rollout engine parses it, and the
episode's reward, ``episode_details`` and feedback (``episode_summary``) are returned. Only arenas where one
answer ends the episode can be rescored (the coding and instruct arenas); others raise an ``ArenaError``.
"""

from __future__ import annotations

from typing import Any

import attrs

from arena.core.api.arena import SeatView
from arena.core.api.errors import ArenaError
from arena.core.host import catalog
from arena.core.rollout.text_adapter import action_mask_of, adapter_for, parse_action


@attrs.frozen
class AnswerScore:
    """The arena's verdict on one answer: reward, the adapter's details (rubrics, score) and its feedback text."""

    reward: float
    details: dict[str, Any]
    feedback: str
    valid: bool = True


def score_answer(arena_id: str, arena_kwargs: dict[str, Any], seed: int, answer: str) -> AnswerScore:
    """Play ``answer`` as the single move of a one-seat, one-answer episode of ``arena_id`` reset from ``seed``."""
    env = catalog.make_arena(arena_id, **arena_kwargs)
    try:
        if catalog.api_kind(env) == "parallel" or len(env.possible_agents) != 1:
            raise ArenaError(f"arena {arena_id!r}: only single-agent AEC arenas can score a given answer")
        adapter = adapter_for(env)
        env.reset(seed=seed)
        agent = env.possible_agents[0]
        total = 0.0
        answered = False
        valid = True
        for current in env.agent_iter(4):
            observation, reward, termination, truncation, info = env.last()
            total += float(reward)
            if termination or truncation:
                env.step(None)
                continue
            if answered:
                raise ArenaError(f"arena {arena_id!r} asks for more than one answer per episode; it cannot be rescored")
            view = SeatView(env, current, 0, observation, action_mask_of(observation, info), dict(info))
            parse = getattr(adapter, "parse_answer", None)
            parsed = parse(view, answer) if parse is not None else parse_action(answer, adapter.legal_moves(view))
            answered = True
            if not parsed.valid:
                valid = False
                break
            env.step(parsed.action)
        end = SeatView(env, agent, 0, None, None, {})
        details_of = getattr(adapter, "episode_details", None)
        details = dict(details_of(end)) if details_of is not None else {}
        feedback = adapter.episode_summary(end) if valid else "The answer was not a usable move."
        return AnswerScore(reward=total if valid else 0.0, details=details, feedback=feedback, valid=valid)
    finally:
        env.close()
