"""sge: Strategy-Guided Exploration (SGE, arXiv 2603.02045; the paper has no public code).

At every step the policy first writes a short strategy and then acts on it; exploration happens in the space of
strategies rather than of tokens. This plugin adds to the default turn prompt (``arena.core.rollout.prompts``):

1. **Strategy prompt** (``pre_action``). Every turn asks "First write a short strategy inside
   <strategy>...</strategy>, then your move." (``instruction``; free-text arenas such as ``coding``, whose
   ``turn.legal_moves`` is empty, get ``instruction_free_text``: "... then your code."). The built-in ``tiny``
   model was trained on that sentence (``STRATEGY_INSTRUCTIONS`` in ``arena.core.models.tiny.demos``).

2. **Mixed-temperature sampling** (``pre_action``'s sampling plan). The completion is sampled in two backend
   segments: the strategy at T_s = 1.2 until ``</strategy>`` (stop string kept) or ``strategy_max_tokens``, then
   the rest (reasoning and the move or code) at T_a = 0.7, both with ``top_p``. Backends record each token's
   temperature (``Completion.temperatures``), and the trainer recomputes log-probs with the same per-token
   temperatures (logits / T_t, ``arena.core.learn.logprobs.policy_logprobs``), so the importance ratio at step 0 is 1.
   Keep ``top_p`` at 1 for exact ratios: the trainer does not apply top-p. The completion's whole budget is the
   engine's ``trial.prompt.max_new_tokens``; the strategy uses at most ``strategy_max_tokens`` of it.
   ``mixed_temperature: false`` (ablation) samples everything in one segment at T_a.

3. **Strategy reflection** (training trials only, ``TrialSpec.training``). Per task, FIFO buffers of
   ``buffer_size`` (32) *strategy sequences* of earlier episodes, one for failures and one for successes. A
   sequence is the text inside ``<strategy>…</strategy>`` of each of the seat's turns of an episode, in order (a
   turn without a closed strategy contributes an empty entry; an episode without any strategy is not stored).
   Success is the seat's outcome ``"win"`` (single-agent arenas: the task solved); anything else is a failure,
   stored with the environment's feedback ``EpisodeRecord.summaries[agent]`` (the coding arena's failing tests).
   Each rollout (trial) draws once, with a seed derived from the trial's seed, id and seat
   (``arena.core.api.seeding.derive_seed``), a uniform u: u < ``p_negative`` (0.25) picks a uniformly drawn failed
   sequence (if that buffer is empty: no reflection), ``p_negative`` ≤ u < ``p_negative + p_positive`` (0.1) a
   successful one (likewise), else none. The draws are exclusive. Every turn of that rollout then shows the
   sequence (and, for a failure, the feedback) and asks to critique it and write a *different*, better strategy
   (``negative_instruction``) or a new one inspired by it (``positive_instruction``). The reflection text is
   part of the prompt, so it stays in the trained context. ``ActionPlan.meta["reflection"]`` records which kind
   was drawn (``none``, ``negative``, ``positive``). Evaluation trials use the plain strategy prompt and leave the
   buffers alone. ``reflection: false`` (ablation) turns the whole mechanism off.

   Task key: (learner ``TrialSpec.meta["learner"]``, arena id, trial seed, seat index, seat spec): a trial's seed is
   its task, and both seats of a game may be LLMs (the spec keeps an LLM opponent's strategies, say a snapshot's,
   out of the learner's buffers). A key comes back only when group seeds recur across iterations, i.e. with the
   run's ``task_pool: N`` (``coding_sge``: 64 tasks, ``kuhn_sge_empo2_mage``: 16 deals' seeds); with
   ``task_pool: 0`` (a fresh seed per group) no buffer is ever read, and the run set-up logs one warning
   (``recurring_tasks`` below declares the mechanism to ``arena.core.learn.task_recurrence``). Buffers are filled at
   ``trial_end`` from every episode of the trial. In a training run (``TrialSpec.meta["iteration"]`` set) an
   episode's sequence becomes visible to draws from the next iteration on: the G rollouts of an iteration all see
   the same buffers, however the engine interleaves them, so what a rollout draws depends only on the seeds and the
   earlier iterations. Without an iteration the sequence is visible at once.

4. **Update**: SGE trains with GRPO (plus DAPO's changes except clip-higher). This plugin does not answer
   ``compute_advantages``: enable it with an estimator, ``plugins: [sge, grpo]``; the G rollouts of a task are
   the group (``group_size``). The paper's update: ``loss: {clip_low: 0.2, clip_high: 0.2, aggregation:
   token_mean, kl_coef: 0}``, ``optim: {lr: 1e-6, epochs: 2}``.

State: the buffers (and sequences not yet visible) live in an ``SGE`` instance. The entry point is the class
(``arena.plugins.sge:SGE``), so every learner that enables ``sge`` gets an instance of its own and learners share
no buffer. ``SGE`` is a ``StatefulPlugin`` (``arena.core.api.state``): the run checkpoints the buffers with
``state_dict()`` (JSON-serialisable) and restores them with ``load_state_dict(state)`` on resume.

Settings come from ``TrialSpec.options["sge"]`` (the learner's ``options``); unknown keys are errors.

Hooks: ``pre_action``, ``trial_end``. Also ``recurring_tasks(options)``, not a hook: the run set-up's check that
strategy reflection can meet a task again (item 3).

| setting | default | meaning |
| --- | --- | --- |
| ``strategy_temperature`` | ``1.2`` | T_s, the strategy segment's temperature |
| ``action_temperature`` | ``0.7`` | T_a, the temperature of everything after the strategy |
| ``top_p`` | ``1.0`` | nucleus of both segments (1: exact recomputed log-probs) |
| ``strategy_max_tokens`` | ``96`` | budget of the strategy segment |
| ``mixed_temperature`` | ``true`` | ablation ``false``: one segment at T_a |
| ``instruction`` | "First write a short strategy inside <strategy>...</strategy>, then your move." | strategy prompt |
| ``instruction_free_text`` | "... then your code." | strategy prompt of free-text arenas (no legal moves) |
| ``reflection`` | ``true`` | ablation ``false``: no buffers, no reflection prompts |
| ``p_negative`` | ``0.25`` | probability of a failed-sequence reflection per rollout |
| ``p_positive`` | ``0.1`` | probability of a successful-sequence reflection (0.5 for AppWorld in the paper) |
| ``buffer_size`` | ``32`` | FIFO size of each per-task buffer |
| ``negative_instruction`` | critique, then a different strategy | request after a failed sequence |
| ``positive_instruction`` | a new strategy inspired by it | request after a successful sequence |
| ``reflection_max_chars`` | ``2000`` | a shown sequence, and its feedback, are each cut to this many characters |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeAlias

import attrs
import numpy as np

from arena.core import (
    ActionPlan,
    EpisodeRecord,
    Segment,
    TrialRecord,
    TrialSpec,
    Turn,
    derive_seed,
    hookimpl,
    read_settings,
    setting,
)

NAME = "sge"
STATE_VERSION = 1
STRATEGY_OPEN, STRATEGY_CLOSE = "<strategy>", "</strategy>"
_STRATEGY = re.compile(re.escape(STRATEGY_OPEN) + r"(.*?)" + re.escape(STRATEGY_CLOSE), re.DOTALL)

NONE, NEGATIVE, POSITIVE = "none", "negative", "positive"

_ge, _le = attrs.validators.ge, attrs.validators.le
_probability = attrs.validators.and_(_ge(0.0), _le(1.0))


@attrs.frozen
class Settings:
    """sge's settings: ``options.sge`` of a learner (checked when the run config loads)."""

    strategy_temperature: float = setting(1.2, "T_s, the strategy segment's temperature", validator=_ge(0.0))
    action_temperature: float = setting(
        0.7, "T_a, the temperature of everything after the strategy", validator=_ge(0.0)
    )
    top_p: float = setting(
        1.0,
        "nucleus of both segments, in (0, 1] (1: exact recomputed log-probs)",
        validator=attrs.validators.and_(attrs.validators.gt(0.0), _le(1.0)),
    )
    strategy_max_tokens: int = setting(96, "budget of the strategy segment", validator=_ge(1))
    mixed_temperature: bool = setting(True, "ablation false: one segment at T_a")
    instruction: str = setting(
        "First write a short strategy inside <strategy>...</strategy>, then your move.", "strategy prompt"
    )
    instruction_free_text: str = setting(
        "First write a short strategy inside <strategy>...</strategy>, then your code.",
        "strategy prompt of free-text arenas (no legal moves)",
    )
    reflection: bool = setting(True, "ablation false: no buffers, no reflection prompts")
    p_negative: float = setting(0.25, "probability of a failed-sequence reflection per rollout", validator=_probability)
    p_positive: float = setting(
        0.1,
        "probability of a successful-sequence reflection (0.5 for AppWorld in the paper)",
        validator=_probability,
    )
    buffer_size: int = setting(32, "FIFO size of each per-task buffer", validator=_ge(1))
    negative_instruction: str = setting(
        "Critique those strategies: inside <strategy>...</strategy>, say in a few words why they failed, then "
        "write a different, better strategy.",
        "request after a failed sequence",
    )
    positive_instruction: str = setting(
        "Write a new strategy inside <strategy>...</strategy>, inspired by those.",
        "request after a successful sequence",
    )
    reflection_max_chars: int = setting(
        2000, "a shown sequence, and its feedback, are each cut to this many characters", validator=_ge(1)
    )

    def __attrs_post_init__(self) -> None:
        if self.p_negative + self.p_positive > 1.0:
            raise ValueError(
                "p_negative + p_positive must be at most 1 (the draws are exclusive), "
                f"got {self.p_negative} + {self.p_positive}"
            )


NEGATIVE_HEADER = "An earlier attempt at this task failed. The strategies you wrote in it, step by step:"
POSITIVE_HEADER = "An earlier attempt at this task succeeded. The strategies you wrote in it, step by step:"
FEEDBACK_HEADER = "Feedback from the environment on that attempt:"

#: (learner, arena id, trial seed, seat index, seat spec)
TaskKey = tuple[str, str, int, int, str]


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["sge"]`` read into :class:`Settings`; unknown keys, wrong types and out-of-range values raise."""
    return read_settings(options, NAME, Settings)


# --------------------------------------------------------------------------------------------------------------
# Strategy sequences
# --------------------------------------------------------------------------------------------------------------


@attrs.frozen
class StrategySequence:
    """The strategies one seat wrote in one episode, in turn order, and what the environment said about it."""

    strategies: tuple[str, ...]
    feedback: str = ""
    trial_id: str = ""
    episode: int = 0
    #: The training iteration that produced it (``TrialSpec.meta["iteration"]``); None outside a training run.
    iteration: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "strategies": list(self.strategies),
            "feedback": self.feedback,
            "trial_id": self.trial_id,
            "episode": self.episode,
            "iteration": self.iteration,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StrategySequence:
        iteration = data.get("iteration")
        return cls(
            strategies=tuple(str(s) for s in data["strategies"]),
            feedback=str(data.get("feedback", "")),
            trial_id=str(data.get("trial_id", "")),
            episode=int(data.get("episode", 0)),
            iteration=None if iteration is None else int(iteration),
        )


def extract_strategy(answer: str) -> str:
    """The text inside the first closed ``<strategy>…</strategy>`` of an answer, stripped; "" when there is none."""
    match = _STRATEGY.search(answer)
    return match.group(1).strip() if match else ""


def episode_sequences(episode: EpisodeRecord) -> dict[tuple[int, str], tuple[str, ...]]:
    """``{(seat, agent): strategies}`` for every LLM seat that moved in ``episode`` and wrote at least one strategy."""
    by_seat: dict[tuple[int, str], list[str]] = {}
    for step in episode.steps:
        if step.completion is None:  # a programmatic seat
            continue
        by_seat.setdefault((step.seat, step.agent), []).append(extract_strategy(step.answer))
    return {key: tuple(seq) for key, seq in by_seat.items() if any(seq)}


def _cut(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def render_sequence(sequence: StrategySequence, max_chars: int = 2000) -> str:
    lines = [f"- Step {i + 1}: {s or '(no strategy written)'}" for i, s in enumerate(sequence.strategies)]
    return _cut("\n".join(lines), max_chars)


def reflection_text(kind: str, sequence: StrategySequence, opts: Settings) -> str:
    """The prompt paragraphs of a ``negative`` or ``positive`` reflection about ``sequence``."""
    limit = opts.reflection_max_chars
    if kind == NEGATIVE:
        parts = [NEGATIVE_HEADER + "\n" + render_sequence(sequence, limit)]
        if sequence.feedback.strip():
            parts.append(FEEDBACK_HEADER + "\n" + _cut(sequence.feedback.strip(), limit))
        parts.append(opts.negative_instruction)
    elif kind == POSITIVE:
        parts = [POSITIVE_HEADER + "\n" + render_sequence(sequence, limit), opts.positive_instruction]
    else:
        raise ValueError(f"no reflection text for kind {kind!r}")
    return "\n\n".join(parts)


def draw_reflection(
    seed: int, failed: int, successful: int, p_negative: float = 0.25, p_positive: float = 0.1
) -> tuple[str, int | None]:
    """``(kind, index)`` of one rollout's reflection: one uniform u decides the kind, a second the entry.

    u < p_negative: a failed sequence (uniform over the ``failed`` entries; none if the buffer is empty);
    p_negative ≤ u < p_negative + p_positive: a successful one (likewise); otherwise none.
    """
    rng = np.random.default_rng(seed)
    u = float(rng.random())
    if u < p_negative:
        return (NEGATIVE, int(rng.integers(failed))) if failed else (NONE, None)
    if u < p_negative + p_positive:
        return (POSITIVE, int(rng.integers(successful))) if successful else (NONE, None)
    return NONE, None


def recurring_tasks(options: Mapping[str, Mapping[str, Any]] | None) -> list[str]:
    """The mechanisms ``options`` enable that need a task key to recur across iterations (``task_pool``), for
    the run set-up's warning (``arena.core.learn.task_recurrence``): strategy reflection, unless it is off."""
    opts = settings(options)
    if not opts.reflection or opts.p_negative + opts.p_positive == 0:
        return []
    return ["strategy reflection (per-task buffers keyed by the trial seed, read from the next iteration on)"]


def task_key(trial: TrialSpec, seat: int) -> TaskKey:
    return (str(trial.meta.get("learner", "")), trial.arena_id, int(trial.seed), int(seat), trial.seats[seat])


def _iteration(trial: TrialSpec) -> int | None:
    value = trial.meta.get("iteration")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


@attrs.frozen
class _Draw:
    kind: str
    sequence: StrategySequence | None = None
    index: int | None = None


_NO_DRAW = _Draw(NONE)


# --------------------------------------------------------------------------------------------------------------
# The plugin
# --------------------------------------------------------------------------------------------------------------


class SGE:
    """The stateful plugin: per-task FIFO buffers of failed and successful strategy sequences."""

    #: The config check and ``arena plugins`` find the settings here (the entry point names the class).
    Settings: TypeAlias = Settings

    def __init__(self) -> None:
        self.failed: dict[TaskKey, list[StrategySequence]] = {}
        self.successful: dict[TaskKey, list[StrategySequence]] = {}
        #: Sequences of a training iteration, not yet visible to the draws of that iteration.
        self.pending: list[tuple[TaskKey, bool, StrategySequence]] = []
        # One draw per (learner, trial, seat), made at its first turn and reused by every later turn.
        self._draws: dict[tuple[str, str, int], _Draw] = {}

    # -- buffers ---------------------------------------------------------------------------------------------

    def add(self, key: TaskKey, success: bool, sequence: StrategySequence, buffer_size: int = 32) -> None:
        """Append to the task's buffer, dropping the oldest entries beyond ``buffer_size`` (FIFO)."""
        buffer = (self.successful if success else self.failed).setdefault(key, [])
        buffer.append(sequence)
        del buffer[:-buffer_size]

    def commit(self, before: int | None, buffer_size: int = 32) -> None:
        """Make pending sequences of iterations before ``before`` visible (all of them when ``before`` is None),
        in a fixed order (iteration, trial, episode, seat) whatever order their trials ended in."""
        ready = [p for p in self.pending if before is None or p[2].iteration is None or p[2].iteration < before]
        if not ready:
            return
        self.pending = [p for p in self.pending if not any(p is r for r in ready)]
        ready.sort(key=lambda p: (p[2].iteration or 0, p[2].trial_id, p[2].episode, p[0][3]))
        for key, success, sequence in ready:
            self.add(key, success, sequence, buffer_size)

    # -- hooks -----------------------------------------------------------------------------------------------

    def _draw(self, turn: Turn, opts: Settings) -> _Draw:
        trial = turn.trial
        cache_key = (str(trial.meta.get("learner", "")), trial.trial_id, turn.seat)
        cached = self._draws.get(cache_key)
        if cached is not None:
            return cached
        self.commit(_iteration(trial), opts.buffer_size)
        key = task_key(trial, turn.seat)
        failed, successful = self.failed.get(key, []), self.successful.get(key, [])
        seed = derive_seed(trial.seed, trial.trial_id, NAME, turn.seat)
        kind, index = draw_reflection(seed, len(failed), len(successful), opts.p_negative, opts.p_positive)
        if kind == NEGATIVE:
            assert index is not None
            draw = _Draw(kind, failed[index], index)
        elif kind == POSITIVE:
            assert index is not None
            draw = _Draw(kind, successful[index], index)
        else:
            draw = _NO_DRAW
        self._draws[cache_key] = draw
        return draw

    @hookimpl
    def pre_action(self, turn: Turn) -> ActionPlan:
        opts = settings(turn.trial.options)
        instruction = opts.instruction if turn.legal_moves else opts.instruction_free_text
        draw = self._draw(turn, opts) if opts.reflection and turn.trial.training else _NO_DRAW
        parts = [instruction]
        meta: dict[str, Any] = {"reflection": draw.kind}
        if draw.sequence is not None:
            parts.insert(0, reflection_text(draw.kind, draw.sequence, opts))
            meta["reflection_source"] = {
                "trial_id": draw.sequence.trial_id,
                "episode": draw.sequence.episode,
                "index": draw.index,
            }
        segments: tuple[Segment, ...]
        if opts.mixed_temperature:
            segments = (
                Segment(
                    temperature=opts.strategy_temperature,
                    top_p=opts.top_p,
                    stop=(STRATEGY_CLOSE,),
                    max_new_tokens=opts.strategy_max_tokens,
                ),
                Segment(temperature=opts.action_temperature, top_p=opts.top_p),
            )
        else:
            segments = (Segment(temperature=opts.action_temperature, top_p=opts.top_p),)
        return ActionPlan(instructions="\n\n".join(parts), segments=segments, source=NAME, meta=meta)

    @hookimpl
    def trial_end(self, trial: TrialRecord) -> None:
        spec = trial.spec
        learner = str(spec.meta.get("learner", ""))
        for cache_key in [k for k in self._draws if k[0] == learner and k[1] == spec.trial_id]:
            del self._draws[cache_key]
        opts = settings(spec.options)
        if not spec.training or not opts.reflection:
            return
        iteration = _iteration(spec)
        self.commit(iteration, opts.buffer_size)
        for episode in trial.episodes:
            for (seat, agent), strategies in episode_sequences(episode).items():
                success = episode.outcomes.get(agent) == "win"
                sequence = StrategySequence(
                    strategies=strategies,
                    feedback=episode.summaries.get(agent, ""),
                    trial_id=spec.trial_id,
                    episode=episode.index,
                    iteration=iteration,
                )
                key = task_key(spec, seat)
                if iteration is None:
                    self.add(key, success, sequence, opts.buffer_size)
                else:
                    self.pending.append((key, success, sequence))

    # -- state -----------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """Buffers and pending sequences as plain JSON data, for the trainer's checkpoint."""
        keys = sorted(set(self.failed) | set(self.successful))
        return {
            "version": STATE_VERSION,
            "buffers": [
                {
                    **_key_json(key),
                    "failed": [s.to_json() for s in self.failed.get(key, [])],
                    "successful": [s.to_json() for s in self.successful.get(key, [])],
                }
                for key in keys
            ],
            "pending": [
                {**_key_json(key), "success": success, "sequence": s.to_json()} for key, success, s in self.pending
            ],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the buffers with those of ``state`` (from :meth:`state_dict`)."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"SGE state version {state.get('version')!r}; this plugin reads version {STATE_VERSION}")
        failed: dict[TaskKey, list[StrategySequence]] = {}
        successful: dict[TaskKey, list[StrategySequence]] = {}
        for entry in state.get("buffers", []):
            key = _key_of(entry)
            if entry.get("failed"):
                failed[key] = [StrategySequence.from_json(s) for s in entry["failed"]]
            if entry.get("successful"):
                successful[key] = [StrategySequence.from_json(s) for s in entry["successful"]]
        pending = [
            (_key_of(p), bool(p["success"]), StrategySequence.from_json(p["sequence"]))
            for p in state.get("pending", [])
        ]
        self.failed, self.successful, self.pending = failed, successful, pending
        self._draws.clear()

    def sequences(self, key: TaskKey) -> tuple[list[StrategySequence], list[StrategySequence]]:
        """``(failed, successful)`` visible for a task, oldest first."""
        return list(self.failed.get(key, [])), list(self.successful.get(key, []))


def _key_json(key: TaskKey) -> dict[str, Any]:
    return {"learner": key[0], "arena": key[1], "seed": key[2], "seat": key[3], "seat_spec": key[4]}


def _key_of(entry: Mapping[str, Any]) -> TaskKey:
    return (str(entry["learner"]), str(entry["arena"]), int(entry["seed"]), int(entry["seat"]), str(entry["seat_spec"]))
