"""reflection: the default reflection turn between the episodes of a trial.

After every episode that another episode follows, each LLM seat writes a short reflection inside
``<remark>…</remark>`` (cut to 2000 characters, as MAGE does); later turns of the same trial see the seat's
reflections under "Your reflections on earlier episodes of this trial". MAGE's own plugin replaces this one
with its prompt composition; this plugin is the plain version that ``arena play --episodes N`` enables.

Hooks: ``reflect``, ``retrieve_memory``.

| setting | value |
| --- | --- |
| tag | ``remark`` |
| max characters kept | 2000 |
| max new tokens | 256 |
"""

from __future__ import annotations

from arena.core import ChatMessage, EpisodeRecord, MemoryItem, Reflection, ReflectionRequest, TrialSpec, Turn, hookimpl

NAME = "reflection"
SECTION = "Your reflections on earlier episodes of this trial:"


def episode_transcript(episode: EpisodeRecord, agent: str) -> str:
    lines = []
    for step in episode.steps:
        who = "you" if step.agent == agent else step.agent
        note = f" (invalid answer: {step.error})" if step.invalid else ""
        lines.append(f"- Step {step.index + 1}, {who}: {step.move_seen_by(agent)}{note}")
    return "\n".join(lines) or "- (no moves)"


@hookimpl
def reflect(
    trial: TrialSpec, episode: EpisodeRecord, agent: str, seat: int, reflections: tuple[Reflection, ...], last: bool
) -> ReflectionRequest | None:
    if last:  # nothing of this trial follows the final episode
        return None
    summary = episode.summaries.get(agent, "")
    text = (
        f"You are {agent} in {trial.arena_id}. Episode {episode.index + 1} of {trial.episodes} just ended; "
        "the next episode starts from the same position against the same opponents.\n\n"
        f"Moves of the episode:\n{episode_transcript(episode, agent)}\n\n"
        f"Outcome: {summary}\n\n"
        "Reflect on what happened: what the opponents did, what you learned about them, and what you will do "
        "differently. Answer inside <remark>...</remark>."
    )
    return ReflectionRequest(name=NAME, messages=(ChatMessage("user", text),), extract_tag="remark")


@hookimpl
def retrieve_memory(turn: Turn) -> list[MemoryItem]:
    mine = [r for r in turn.reflections if r.name == NAME and r.agent == turn.agent]
    # Chronological: the earliest episode gets the highest score.
    return [
        MemoryItem(text=f"After episode {r.episode + 1}: {r.content}", section=SECTION, score=-r.episode, source=NAME)
        for r in mine
    ]
