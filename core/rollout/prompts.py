"""The default turn prompt: one fresh user message per LLM turn (no growing chat transcript).

Layout: rules, the trial's position (episode k of N), memory sections from ``retrieve_memory``, the current
episode's recent steps, the observation, plugin instructions from ``pre_action``, the answer format, and last
the legal moves: ``Legal moves:`` followed by ``ID: NAME`` lines (free-text arenas such as coding replace the
answer format with their adapter's ``answer_format`` and show no move list).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.api.backend import ChatMessage
from arena.core.api.records import MemoryItem, Step, Turn
from arena.core.config.trial import PromptConfig
from arena.core.rollout.text_adapter import format_moves

ANSWER_FORMAT = "Think briefly if it helps, then give exactly one legal move as <action>MOVE</action>."


def render_memories(items: Sequence[MemoryItem]) -> str:
    """Group by section (first-seen order), highest score first within a section; stable for equal scores."""
    sections: dict[str, list[MemoryItem]] = {}
    for item in items:
        sections.setdefault(item.section, []).append(item)
    blocks = []
    for header, members in sections.items():
        ranked = sorted(members, key=lambda m: -m.score)
        lines = [f"<{m.tag}>{m.text}</{m.tag}>" if m.tag else f"- {m.text}" for m in ranked]
        blocks.append(header + "\n" + "\n".join(lines))
    return "\n\n".join(blocks)


def render_history(turn: Turn, config: PromptConfig) -> str:
    steps: Sequence[Step] = turn.history[-config.history_steps :] if config.history_steps else ()
    if not steps:
        return "No moves yet in this episode."
    full_from = len(steps) - config.full_observation_steps
    lines = []
    for position, step in enumerate(steps):
        who = f"you ({step.agent})" if step.agent == turn.agent else step.agent
        line = f"- Step {step.index + 1}, {who}: {step.move_seen_by(turn.agent)}"
        if step.invalid:
            line += f" (invalid answer: {step.error})"
        lines.append(line)
        # Only the seat's own observations: another seat's (an LLM opponent's) would show its private cards.
        if position >= full_from and step.observation and step.agent == turn.agent:
            lines.append("  What you saw then: " + step.observation.replace("\n", "\n  "))
    return "Recent steps of this episode:\n" + "\n".join(lines)


def build_turn_prompt(
    turn: Turn,
    memories: Sequence[MemoryItem],
    instructions: Sequence[str],
    config: PromptConfig,
    retry_note: str = "",
) -> tuple[ChatMessage, ...]:
    parts = [turn.rules.strip()]
    if turn.trial.episodes > 1:
        parts.append(
            f"This is episode {turn.episode + 1} of {turn.trial.episodes} of a trial: every episode starts from "
            "the same position against the same opponents. Use what earlier episodes taught you."
        )
    memory_text = render_memories(memories)
    if memory_text:
        parts.append(memory_text)
    parts.append(render_history(turn, config))
    parts.append("Current observation:\n" + turn.observation.strip())
    parts.extend(text.strip() for text in instructions if text.strip())
    if retry_note:
        parts.append(retry_note)
    parts.append(turn.answer_format or ANSWER_FORMAT)
    # The move list comes last, right before the answer: small models copy a move from it far more reliably
    # when nothing stands between the list and the place they write. Free-text arenas (coding) have none.
    if turn.legal_moves:
        parts.append("Legal moves:\n" + format_moves(turn.legal_moves))
    messages = []
    if config.system:
        messages.append(ChatMessage("system", config.system))
    messages.append(ChatMessage("user", "\n\n".join(parts)))
    return tuple(messages)
