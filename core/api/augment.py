"""Group augmentation: plugins add generated samples to scored groups (HeRL revisions, GOLF refinements).

The protocol has two halves so that every extra generation of an iteration, of every group and every plugin, is
sampled in one batch:

1. ``augment_group(group, task, options)`` (a hook, per group): a plugin returns an :class:`Augmentation`: the
   generation requests it wants (a revision prompt per candidate, one refinement prompt with ``n`` samples) and a
   ``finish`` callback.
2. The core generates all requests of all groups at once with the learner's backend, scores every completion as an
   answer to the group's task (:func:`arena.core.learn.rescoring.score_answer`), and calls each ``finish(group,
   answers)``
   in plugin order. ``finish`` returns an :class:`AugmentResult`: the group as it should be trained (slots replaced,
   bonus reward terms added) and extra samples that form groups of their own (GOLF's refiner group).

Groups are formed from the ``action`` samples of one episode of the ``group_size`` trials that share a
``group_id``; only groups where each trial gave exactly one answer in that episode are offered (revising one move
of a multi-turn game is not what these methods do). :func:`answer_sample` builds a trainable sample from a scored
answer, so plugins do not each reinvent the bookkeeping.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest
from arena.core.api.samples import LossKind, Sample


@attrs.frozen
class GroupTask:
    """The task a group played: enough to rebuild the arena and score any other answer to it."""

    arena_id: str
    arena_kwargs: dict[str, Any]
    seed: int
    group_id: str
    episode: int
    iteration: int = 0
    max_new_tokens: int = 256


@attrs.frozen
class ScoredAnswer:
    """One generated completion of an augmentation request, scored by the arena as an answer to the group's task.

    ``details`` and ``feedback`` are what the arena's adapter reports for that answer (``rubrics``, ``score``,
    ``critique``; the failing tests). ``messages`` are the request's prompt messages.
    """

    completion: Completion
    messages: tuple[ChatMessage, ...]
    reward: float
    details: dict[str, Any]
    feedback: str

    @property
    def text(self) -> str:
        return self.completion.text

    @property
    def empty(self) -> bool:
        return not self.completion.token_ids or not self.completion.text.strip()


@attrs.frozen
class AugmentResult:
    """What a plugin made of a group: the group to train (same slots, some replaced) and samples of new groups.

    ``stats`` are summed over groups into ``augment/<plugin>/<name>`` metrics; ``warnings`` are counted and logged.
    """

    group: tuple[Sample, ...]
    extra: tuple[Sample, ...] = ()
    stats: dict[str, float] = attrs.field(factory=dict)
    warnings: tuple[str, ...] = ()


#: ``finish(group, answers)``: ``answers[i]`` holds the ``requests[i].n`` scored completions of request ``i``.
Finish = Callable[[tuple[Sample, ...], tuple[tuple[ScoredAnswer, ...], ...]], AugmentResult]


@attrs.frozen
class Augmentation:
    """A plugin's plan for one group: requests to generate, and what to do with the scored answers."""

    requests: tuple[GenerationRequest, ...]
    finish: Finish
    source: str = ""  # the plugin's name: keys its metrics and the seeds of its requests


def group_score(sample: Sample) -> float:
    """The task score of a sample's answer: the arena's ``score`` detail when it reports one, else its reward."""
    details = sample.meta.get("details") or {}
    score = details.get("score")
    return float(score) if isinstance(score, int | float) else float(sample.reward)


def answer_sample(
    answer: ScoredAnswer,
    like: Sample,
    *,
    kind: str,
    loss: LossKind,
    context: str = "request",
    group_id: str | None = None,
    trial_id: str | None = None,
    reward_terms: Mapping[str, float] | None = None,
    meta: Mapping[str, Any] | None = None,
) -> Sample:
    """A trainable sample of ``answer``, taking its identity (trial, episode, turn, anchor) from ``like``.

    ``context="request"`` trains in the prompt the answer was generated from (a revision prompt, GOLF's feedback
    prompt): the behaviour log-probs were measured there, so ratios are exact. ``context="original"`` trains it as
    the answer to ``like``'s prompt (HeRL's ``train_context: original``, GOLF's injection); the generation prompt
    is kept as ``rollout_context_*`` so the dump shows where the tokens came from.
    """
    completion = answer.completion
    request_text = "\n\n".join(m.content for m in answer.messages)
    base_meta = {**like.meta, "details": answer.details, "feedback": answer.feedback, "plans": {}}
    base_meta.update(meta or {})
    fields: dict[str, Any] = {
        "kind": kind,
        "loss": loss,
        "completion_ids": tuple(completion.token_ids),
        "behaviour_logprobs": tuple(completion.logprobs),
        "temperatures": tuple(completion.temperatures),
        "completion_text": completion.text,
        "reward_terms": dict(reward_terms if reward_terms is not None else {"env": answer.reward}),
        "group_id": group_id if group_id is not None else like.group_id,
        "trial_id": trial_id if trial_id is not None else like.trial_id,
        "ret": 0.0,
        "advantage": 0.0,
        "meta": base_meta,
    }
    if context == "request":
        fields.update(
            context_ids=tuple(int(t) for t in completion.prompt_token_ids),
            context_text=request_text,
            context_messages=answer.messages,
            rollout_context_ids=None,
            rollout_context_text=None,
        )
    elif context == "original":
        fields.update(
            rollout_context_ids=tuple(int(t) for t in completion.prompt_token_ids),
            rollout_context_text=request_text,
        )
    else:
        raise ValueError(f"context must be 'request' or 'original', got {context!r}")
    return attrs.evolve(like, **fields)


def augmentable_groups(samples: Sequence[Sample]) -> tuple[dict[tuple[str, int], list[int]], int]:
    """Indices of the action samples of each (group, episode) whose trials answered exactly once; and how many
    (group, episode) pairs were left out because some trial took several turns."""
    by_key: dict[tuple[str, int], list[int]] = {}
    for i, s in enumerate(samples):
        if s.kind == "action":
            by_key.setdefault((s.group_id, s.episode), []).append(i)
    kept: dict[tuple[str, int], list[int]] = {}
    multi_turn = 0
    for key, indices in by_key.items():
        trials = [samples[i].trial_id for i in indices]
        if len(set(trials)) == len(trials):
            kept[key] = indices
        else:
            multi_turn += 1
    return kept, multi_turn


def system_messages(sample: Sample) -> tuple[ChatMessage, ...]:
    """The system messages of the sample's prompt (kept in augmentation prompts so the model sees the same persona)."""
    return tuple(m for m in sample.context_messages if m.role == "system")


def answer_format_of(sample: Sample) -> str:
    """The closing instruction of the sample's turn prompt: for free-text arenas the adapter's ``answer_format``
    (``arena.core.rollout.prompts.build_turn_prompt`` puts it last, as its own paragraph, when there is no move
    list)."""
    users = [m.content for m in sample.context_messages if m.role == "user"]
    if not users:
        return ""
    return users[-1].strip().split("\n\n")[-1].strip()


def task_text_of(sample: Sample) -> str:
    """The task statement: the arena's ``task_text`` detail when it reports one, else the turn's whole prompt."""
    details = sample.meta.get("details") or {}
    text = details.get("task_text")
    if isinstance(text, str) and text.strip():
        return text.strip()
    users = [m.content for m in sample.context_messages if m.role == "user"]
    return users[-1].strip() if users else sample.context_text
