"""Frozen records that cross hook boundaries during play.

Plugins receive these and return new ones; nothing here is mutated after construction, so a plugin can keep
a reference (EMPO² memory, SGE buffers) without copying.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from arena.core.api.arena import Move
from arena.core.api.backend import ChatMessage, Completion, Segment

Outcome = Literal["win", "draw", "loss"]


@attrs.frozen
class TrialSpec:
    """What to play: ``seats[i]`` (a seat spec such as ``model:tiny`` or ``mcts:100``) takes
    ``env.possible_agents[i]``. Every episode of the trial restarts the arena from ``seed``.

    ``options`` are the enabled plugins' settings (the learner's ``options``: plugin name → settings dict), so
    the trial-phase hooks (``reflect``, ``retrieve_memory``, ``pre_action``, ``compute_rewards`` through
    ``TrialRecord.spec``) read the same settings ``compute_advantages`` gets; empty means defaults.
    """

    trial_id: str
    arena_id: str
    seats: tuple[str, ...]
    seed: int
    episodes: int = 1
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)
    group_id: str | None = None
    early_stop_on_win: bool = False
    training: bool = True
    meta: dict[str, Any] = attrs.field(factory=dict)
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)


@attrs.frozen
class Step:
    """One decision of one seat. ``completion`` and ``prompt`` are set for LLM seats only.

    ``action`` is the environment's action: an action id, or for free-text arenas (the coding arena) whatever
    the adapter's ``parse_answer`` made of the answer (the code).

    ``invalid`` says the seat's final answer was not a legal move (``error`` says why); ``attempts`` counts the
    answers it took (more than one under the ``retry`` policy).

    ``move`` is the name the acting seat chose (its own view's ``Move.name``, which may name private things:
    "hide 9"); ``public_move`` is the adapter's ``action_name`` at the acting seat's view, the name every other
    seat is shown (``None`` when it equals ``move``). Read it through ``move_seen_by``.
    """

    episode: int
    index: int
    agent: str
    seat: int
    action: Any
    move: str
    observation: str = ""
    answer: str = ""
    invalid: bool = False
    error: str | None = None
    attempts: int = 1
    prompt: tuple[ChatMessage, ...] = ()
    completion: Completion | None = None
    #: ``ActionPlan.meta`` of the plugins that planned this turn, by plugin (SGE: which reflection was drawn).
    plans: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    #: A plan said the answer was not sampled from the policy alone (``ActionPlan.recompute_old``).
    recompute_old: bool = False
    #: The name other seats see (``action_name`` at the acting seat's view), when it differs from ``move``.
    public_move: str | None = None

    def move_seen_by(self, agent: str) -> str:
        """The move's name as ``agent`` may see it: its own name for its own steps, the public name otherwise."""
        if agent == self.agent or self.public_move is None:
            return self.move
        return self.public_move

    @property
    def invalid_answers(self) -> int:
        return self.attempts if self.invalid else self.attempts - 1


@attrs.frozen
class EpisodeRecord:
    """A finished episode: per-agent returns and outcomes, every step, and who forfeited (if anyone)."""

    trial_id: str
    index: int
    seed: int
    steps: tuple[Step, ...]
    returns: dict[str, float]
    outcomes: dict[str, Outcome]
    invalid_actions: dict[str, int]
    forfeited_by: str | None = None
    #: The environment's feedback per LLM agent (``TextAdapter.episode_summary``): outcome, cards revealed,
    #: failing tests.
    summaries: dict[str, str] = attrs.field(factory=dict)
    #: Machine-readable facts per LLM agent from the adapter's optional ``episode_details`` (``task_id``,
    #: ``score``, ``outcome_key``: what distinct outcome was reached, such as the set of passed tests).
    details: dict[str, dict[str, Any]] = attrs.field(factory=dict)


@attrs.frozen
class Turn:
    """Everything known before an LLM seat's turn; the argument of ``retrieve_memory`` and ``pre_action``."""

    trial: TrialSpec
    episode: int
    step: int
    agent: str
    seat: int
    rules: str
    observation: str
    legal_moves: tuple[Move, ...]
    history: tuple[Step, ...]
    earlier_episodes: tuple[EpisodeRecord, ...]
    reflections: tuple[Reflection, ...]
    #: The adapter's ``answer_format`` for free-text arenas (their ``legal_moves`` is empty); None: pick a move.
    answer_format: str | None = None
    #: How the engine samples this turn when no plugin plans otherwise (``trial.prompt``'s temperature and top-p);
    #: a plugin that replaces the sampling plan (MENTOR's guided segment) copies it.
    default_segment: Segment | None = None


@attrs.frozen
class MemoryItem:
    """A piece of text a plugin wants in the prompt.

    Items are grouped by ``section`` (its header line, in first-seen order), ranked by ``score`` (highest
    first) within a section, and wrapped in ``<tag>…</tag>`` when ``tag`` is set (EMPO² uses ``tip``).
    """

    text: str
    section: str
    score: float = 0.0
    source: str = ""
    tag: str | None = None


@attrs.frozen
class ActionPlan:
    """A plugin's say in one LLM turn: extra instructions and, optionally, the sampling plan.

    ``instructions`` of all plugins are appended to the prompt in plugin order. At most one plugin may set
    ``segments`` (or ``max_new_tokens``) for a turn: two that do are an error naming both.
    """

    instructions: str = ""
    segments: tuple[Segment, ...] | None = None
    max_new_tokens: int | None = None
    source: str = ""
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: The turn's tokens are not drawn from the policy alone (MENTOR's guided segment samples a policy/expert
    #: mixture), so their behaviour log-probs are no π_old: the trainer recomputes π_old with the policy before
    #: the update (``Sample.recompute_old``), as MENTOR's code does.
    recompute_old: bool = False


@attrs.frozen
class ReflectionRequest:
    """A generation a plugin wants after an episode (a MAGE ``<remark>``, an EMPO² tip).

    The engine batches all of them with everything else, extracts the text inside ``<extract_tag>`` (the whole
    answer when the tag is missing), cuts it to ``max_chars`` and hands a ``Reflection`` to ``store_memory``.
    """

    name: str
    messages: tuple[ChatMessage, ...]
    extract_tag: str | None = None
    max_chars: int = 2000
    max_new_tokens: int = 256
    segments: tuple[Segment, ...] = (Segment(),)
    trained: bool = True


@attrs.frozen
class Reflection:
    """A generated reflection, attached to the trial; ``content`` is the extracted, cut text."""

    name: str
    trial_id: str
    episode: int
    agent: str
    seat: int
    content: str
    answer: str
    prompt: tuple[ChatMessage, ...]
    completion: Completion | None
    trained: bool = True


@attrs.frozen
class TrialRecord:
    spec: TrialSpec
    episodes: tuple[EpisodeRecord, ...]
    reflections: tuple[Reflection, ...]

    @property
    def final(self) -> EpisodeRecord:
        return self.episodes[-1]
