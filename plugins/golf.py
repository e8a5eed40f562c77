"""golf: group-level natural-language feedback for exploration (GOLF, arXiv 2603.04597; code LuckyyySTA/GOLF).

Every answer gets a scalar reward and a critique (the failing tests and traceback for code, the unmet constraints
for instructions). GOLF turns a group's failures into a lesson:

1. **Aggregation**: one refinement prompt per group with the task and *all* failed attempts (score < 1), each with
   its score and critique, shortest first until ``prompt_budget_chars``; it asks to learn from the critiques, keep
   what works, combine the best parts and output only the improved answer.
2. **Refiner group**: the policy samples ``n`` refinements of that prompt (batched with every other group's in one
   generation, ``augment_group``); each is scored by the arena, and they are trained as a second, on-policy group
   (``kind: refinement``, group ``<group>/golf-e<episode>``) whose context is the feedback prompt: the policy
   learns to refine.
3. **Adaptive injection**: when the group has fewer than ⌈threshold·G⌉ correct answers (0.125 for code and math:
   only all-wrong groups; 0.25 for instructions), one refinement with reward exactly 1.0 replaces a random wrong
   answer, trained as the answer to the *original* prompt with the shaped loss −A·π_θ/(π_θ + 0.1): no ratio, no
   clip (``loss: shaped_prob``, γ in ``meta["shaped_gamma"]``).
4. **Advantages**: mean-centred only (no std), the injected sample inside its group, no KL: use ``grpo`` with
   ``std_norm: false`` and ``kl_coef: 0`` (``configs/coding_golf.yaml``).

Hooks: ``augment_group``. Needs a single-answer arena whose episode feedback is a critique (``coding``, ``instruct``).

| setting | default | meaning |
| --- | --- | --- |
| ``n`` | ``8`` | refinements sampled per group |
| ``threshold`` | ``-1.0`` | inject when #correct < ⌈threshold·G⌉; negative: by arena (coding 0.125, instruct 0.25) |
| ``feedback`` | ``"both"`` | ablation: ``both``; ``critiques`` (no attempt texts); ``attempts`` (no critiques) |
| ``prompt_budget_chars`` | ``6000`` | attempts are added shortest first until the prompt would exceed this |
| ``temperature`` | ``1.0`` | sampling temperature of refinements |
| ``gamma`` | ``0.1`` | γ of the injected sample's shaped loss π/(π+γ) |
| ``train_refiner`` | ``true`` | train the refiner group (off: refinements only feed the injection) |
| ``inject`` | ``true`` | ablation: off never injects |
| ``max_new_tokens`` | ``0`` | refinement budget; 0 = the run's answer budget |

Departures: the authors' budget is in tokens; here it is in characters (tokenizer-free, so the prompt is the
same on every backend). A group whose refinements are all empty passes through unchanged with a warning.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from arena.core import (
    Augmentation,
    AugmentResult,
    ChatMessage,
    GenerationRequest,
    GroupTask,
    Sample,
    ScoredAnswer,
    Segment,
    answer_format_of,
    answer_sample,
    derive_seed,
    group_score,
    hookimpl,
    read_settings,
    setting,
    system_messages,
    task_text_of,
)

NAME = "golf"
#: The papers' injection thresholds by kind of task.
ARENA_THRESHOLDS: Mapping[str, float] = {"coding": 0.125, "instruct": 0.25}
PERFECT = 1.0 - 1e-9
_positive = attrs.validators.gt(0)


@attrs.frozen
class Settings:
    """golf's settings: ``options.golf`` of a learner (checked when the run config loads)."""

    n: int = setting(8, "refinements sampled per group", validator=attrs.validators.ge(1))
    threshold: float = setting(
        -1.0, "inject when #correct < ⌈threshold·G⌉; negative: by arena (coding 0.125, instruct 0.25)"
    )
    feedback: Literal["both", "critiques", "attempts"] = setting(
        "both", "ablation: both; critiques (no attempt texts); attempts (no critiques)"
    )
    prompt_budget_chars: int = setting(
        6000, "attempts are added shortest first until the prompt would exceed this", validator=attrs.validators.ge(1)
    )
    temperature: float = setting(1.0, "sampling temperature of refinements", validator=_positive)
    gamma: float = setting(0.1, "γ of the injected sample's shaped loss π/(π+γ)", validator=_positive)
    train_refiner: bool = setting(True, "train the refiner group (off: refinements only feed the injection)")
    inject: bool = setting(True, "ablation: off never injects")
    max_new_tokens: int = setting(0, "refinement budget; 0 = the run's answer budget")


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["golf"]`` read into :class:`Settings`."""
    return read_settings(options, NAME, Settings)


def threshold_for(arena_id: str, configured: float) -> float:
    return configured if configured >= 0 else ARENA_THRESHOLDS.get(arena_id, 0.125)


def critique_of(sample: Sample) -> str:
    details = sample.meta.get("details") or {}
    text = details.get("critique") or sample.meta.get("feedback") or ""
    return str(text).strip()


def attempt_block(number: int, sample: Sample, mode: str) -> str:
    lines = [f"Attempt {number} (score {group_score(sample):.2f}):"]
    if mode in ("both", "attempts"):
        lines.append(sample.completion_text.strip() or "(empty answer)")
    if mode in ("both", "critiques"):
        lines.append("Feedback:\n" + (critique_of(sample) or "(no feedback)"))
    return "\n".join(lines)


def refinement_prompt(group: tuple[Sample, ...], mode: str = "both", budget_chars: int = 6000) -> tuple[str, int]:
    """The group's aggregated feedback prompt and how many failed attempts it shows (shortest first, within budget).

    At least one attempt is always shown, even when it alone exceeds the budget.
    """
    failed = [s for s in group if group_score(s) < PERFECT]
    failed.sort(key=lambda s: len(s.completion_text) + len(critique_of(s)))
    head = "Task:\n" + task_text_of(group[0])
    closing = answer_format_of(group[0])
    tail = (
        "Learn from the feedback on these attempts: keep what works, fix what failed, and combine the best parts "
        "into one improved answer. Output only the improved answer." + (f" {closing}" if closing else "")
    )
    blocks: list[str] = []
    size = len(head) + len(tail) + 80
    for sample in failed:
        block = attempt_block(len(blocks) + 1, sample, mode)
        if blocks and size + len(block) > budget_chars:
            break
        blocks.append(block)
        size += len(block) + 2
    intro = "Earlier attempts at this task did not fully succeed. Here they are with their scores and feedback:"
    return "\n\n".join([head, intro, *blocks, tail]), len(blocks)


def finish_group(
    group: tuple[Sample, ...],
    refinements: tuple[ScoredAnswer, ...],
    task: GroupTask,
    opts: Settings,
    rng: random.Random,
) -> AugmentResult:
    """The refiner group, and one perfect refinement injected into a wrong slot when the group is below threshold."""
    if all(a.empty for a in refinements):
        return AugmentResult(group=group, warnings=("every refinement was empty or failed; group unchanged",))
    stats: dict[str, float] = {
        "groups": 1.0,
        "refinements": float(len(refinements)),
        "refinement_reward_sum": float(sum(a.reward for a in refinements)),
        "perfect_refinements": float(sum(a.reward >= PERFECT for a in refinements)),
    }
    extra: tuple[Sample, ...] = ()
    if opts.train_refiner:
        extra = tuple(
            answer_sample(
                answer,
                group[0],
                kind="refinement",
                loss="ppo",
                context="request",
                group_id=f"{task.group_id}/golf-e{task.episode}",
                trial_id=f"{task.group_id}-e{task.episode}-golf-r{k}",
                meta={"golf": {"refiner": True}},
            )
            for k, answer in enumerate(refinements)
            if not answer.empty
        )
    out = list(group)
    correct = sum(group_score(s) >= PERFECT for s in group)
    needed = math.ceil(threshold_for(task.arena_id, opts.threshold) * len(group))
    wrong = [i for i, s in enumerate(group) if group_score(s) < PERFECT]
    perfect = [a for a in refinements if a.reward >= PERFECT and not a.empty]
    if opts.inject and correct < needed and perfect and wrong:
        slot = rng.choice(wrong)
        out[slot] = answer_sample(
            perfect[0],
            group[slot],
            kind="action",
            loss="shaped_prob",
            context="original",
            reward_terms={"env": 1.0},
            meta={"injected": "golf", "shaped_gamma": opts.gamma, "golf": {"replaced": group[slot].trial_id}},
        )
        stats["injections"] = 1.0
    return AugmentResult(group=tuple(out), extra=extra, stats=stats)


@hookimpl
def augment_group(
    group: tuple[Sample, ...], task: GroupTask, options: Mapping[str, Mapping[str, Any]]
) -> Augmentation | None:
    opts = settings(options)
    if not group or all(group_score(s) >= PERFECT for s in group):
        return None  # nothing failed: no feedback to learn from
    prompt, shown = refinement_prompt(group, opts.feedback, opts.prompt_budget_chars)
    request = GenerationRequest(
        messages=(*system_messages(group[0]), ChatMessage("user", prompt)),
        segments=(Segment(temperature=opts.temperature),),
        max_new_tokens=opts.max_new_tokens or task.max_new_tokens,
        n=opts.n,
        purpose="golf_refinement",
    )
    rng = random.Random(derive_seed(NAME, task.group_id, task.episode, task.iteration))

    def finish(current: tuple[Sample, ...], answers: tuple[tuple[ScoredAnswer, ...], ...]) -> AugmentResult:
        result = finish_group(current, answers[0], task, opts, rng)
        return AugmentResult(
            group=result.group,
            extra=result.extra,
            stats={**result.stats, "attempts_shown": float(shown)} if result.stats else {},
            warnings=result.warnings,
        )

    return Augmentation(requests=(request,), finish=finish, source=NAME)
