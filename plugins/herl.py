"""herl: hindsight experience guided RL (HeRL, arXiv 2603.20046; code sikelifei/HeRL).

For a group of answers to a rubric-scored task (each rubric a described, checkable constraint; reward = fraction
satisfied), HeRL shows the policy what it got right and wrong in hindsight and asks it to revise its best drafts:

1. **Trigger**: a group without a perfect answer (best score < 1.0).
2. **Candidates**: every answer tied at the group's best score (at most ``max_candidates``).
3. **Hindsight prompt**: the instruction, the rubrics the draft satisfies ("keep these"), the ones it misses
   ("fix these"), and the draft; "revise it, add no new facts". One revision per candidate by the current policy
   at T = 0.3, every revision of the iteration generated in one batch (``augment_group``), each scored by the arena
   with the same rubrics.
4. **Bonus**: each candidate gets the reward term ``herl_bonus = α·(R(revision) − R)`` (negative when the revision
   is worse).
5. **Injection**: the best revision that beats the group's best (else one that ties it) replaces a random slot of
   the group; when none qualifies, a copy of the best original answer does. The injected sample is trained in the
   revision prompt (``train_context: revision``, the authors' code) or as the answer to the original prompt
   (``original``), with the shaped loss −A·r/(r+γ), r = π_θ/π_old in the same context, no clip
   (``loss: shaped_ratio``, γ in ``meta["shaped_gamma"]``). Other samples keep PPO-clip; the advantage estimator
   (GRPO) sees the injected sample inside its group. As in the authors' code (π_old recomputed over the final
   batch at the rollout temperature), the injected revision is scored at the policy's sampling temperature (the
   replaced rollout's; T 1 in the shipped configs), not at the revision's T 0.3, and its π_old is recomputed by
   the policy in the training context before the update (``Sample.recompute_old``), whatever
   ``loss.old_logprobs`` says. Before issue 22 the trainer used the revision's behaviour log-probs: T 0.3, and
   with ``train_context: original`` taken in the revision prompt.

Hooks: ``augment_group``. Works on arenas whose ``episode_details`` report ``rubrics`` (``instruct``; ``coding``
turns each hidden test into a rubric) and ``task_text``; an arena without rubrics can still use the
``naive_prompt`` ablation.

| setting | default | meaning |
| --- | --- | --- |
| ``alpha`` | ``0.05`` | bonus weight α on R(revision) − R |
| ``temperature`` | ``0.3`` | sampling temperature of revisions |
| ``max_candidates`` | ``16`` | candidates revised per group (ties at the best score, in group order) |
| ``gamma`` | ``1.0`` | γ of the shaped loss (the paper uses 0.1 for judge-scored tasks) |
| ``train_context`` | ``"revision"`` | train the injected text in the hindsight prompt, or ``original`` |
| ``naive_prompt`` | ``false`` | ablation: ask for a revision without the satisfied/unmet rubric lists |
| ``bonus`` | ``true`` | ablation: off drops the α bonus term |
| ``max_new_tokens`` | ``0`` | revision budget; 0 = the run's answer budget |

Departures from the paper: an empty revision counts as no revision (no bonus for its candidate, never injected),
so a group whose revisions are all empty passes through unchanged with a warning.
"""

from __future__ import annotations

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

NAME = "herl"
#: A score counts as perfect from here (scores are fractions of rubrics; float noise must not hide a 1.0).
PERFECT = 1.0 - 1e-9
_positive = attrs.validators.gt(0)


@attrs.frozen
class Settings:
    """herl's settings: ``options.herl`` of a learner (checked when the run config loads)."""

    alpha: float = setting(0.05, "bonus weight α on R(revision) − R")
    temperature: float = setting(0.3, "sampling temperature of revisions", validator=_positive)
    max_candidates: int = setting(
        16, "candidates revised per group (ties at the best score, in group order)", validator=attrs.validators.ge(1)
    )
    gamma: float = setting(1.0, "γ of the shaped loss (the paper uses 0.1 for judge-scored tasks)", validator=_positive)
    train_context: Literal["revision", "original"] = setting(
        "revision", "train the injected text in the hindsight prompt, or original"
    )
    naive_prompt: bool = setting(False, "ablation: ask for a revision without the satisfied/unmet rubric lists")
    bonus: bool = setting(True, "ablation: off drops the α bonus term")
    max_new_tokens: int = setting(0, "revision budget; 0 = the run's answer budget")


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["herl"]`` read into :class:`Settings`."""
    return read_settings(options, NAME, Settings)


def rubric_lists(sample: Sample) -> tuple[list[str], list[str]] | None:
    """(satisfied, unmet) rubric descriptions of the sample's answer, or None when the arena reports no rubrics."""
    rubrics = (sample.meta.get("details") or {}).get("rubrics")
    if not isinstance(rubrics, list) or not rubrics:
        return None
    met = [str(r["description"]) for r in rubrics if r.get("satisfied")]
    unmet = [str(r["description"]) for r in rubrics if not r.get("satisfied")]
    return met, unmet


def hindsight_prompt(sample: Sample, naive: bool = False) -> str:
    """The revision request for one draft: instruction, rubric status (unless ``naive``), the draft, the format."""
    parts = ["Here is an instruction and a draft answer to it.", "Instruction:\n" + task_text_of(sample)]
    if not naive:
        lists = rubric_lists(sample)
        if lists is None:
            raise ValueError("hindsight_prompt needs rubrics in the sample's details (or naive=True)")
        met, unmet = lists
        listed = "\n".join(f"- {d}" for d in met) if met else "- (none)"
        parts.append("Constraints the draft already satisfies (keep them satisfied):\n" + listed)
        parts.append("Constraints the draft does not satisfy yet (fix them):\n" + "\n".join(f"- {d}" for d in unmet))
    parts.append("Draft:\n" + sample.completion_text.strip())
    if naive:
        parts.append("Revise the draft so that it follows the instruction better.")
    else:
        parts.append("Revise the draft: keep the satisfied constraints, fix the unmet ones, and add no new facts.")
    # The arena's own answer format ("Reply with the response only.", "one ```python block") closes the prompt.
    parts.append(answer_format_of(sample) or "Reply with the revised answer only.")
    return "\n\n".join(parts)


def candidates(group: tuple[Sample, ...], limit: int) -> list[int]:
    """Indices of the answers tied at the group's best score, in group order, at most ``limit``."""
    scores = [group_score(s) for s in group]
    best = max(scores)
    return [i for i, score in enumerate(scores) if score == best][:limit]


def choose_injection(best: float, revisions: list[tuple[int, ScoredAnswer]]) -> tuple[int, ScoredAnswer] | None:
    """The revision to inject: the highest-scoring one that beats ``best``, else the first that ties it, else None."""
    usable = [(i, a) for i, a in revisions if not a.empty]
    better = [(i, a) for i, a in usable if a.reward > best]
    if better:
        return max(better, key=lambda pair: pair[1].reward)  # max keeps the first of equal rewards
    tied = [(i, a) for i, a in usable if a.reward == best]
    return tied[0] if tied else None


def scored_like_the_policy(injected: Sample, replaced: Sample) -> Sample:
    """The injected revision as the authors' code trains it: log-probs at the policy's sampling temperature (the
    replaced rollout's, T 1 in the shipped configs) rather than the revision's T 0.3, and π_old recomputed by the
    policy in the training context (the revision prompt, or the original one with ``train_context: original``)
    before the update. The revision's behaviour log-probs (T 0.3, revision prompt) stay for the dumps only."""
    temperature = replaced.temperatures[0] if replaced.temperatures else 1.0
    return attrs.evolve(
        injected, temperatures=(temperature,) * len(injected.completion_ids), recompute_old=True, old_context="train"
    )


def finish_group(
    group: tuple[Sample, ...],
    answers: tuple[tuple[ScoredAnswer, ...], ...],
    chosen: list[int],
    opts: Settings,
    rng: random.Random,
) -> AugmentResult:
    """Bonus terms for the candidates, then one injected sample (revision, else the best original) in a random slot."""
    revisions = [(c, a[0]) for c, a in zip(chosen, answers, strict=True) if a]
    if not any(not a.empty for _, a in revisions):
        return AugmentResult(group=group, warnings=("every revision was empty or failed; group unchanged",))
    out = list(group)
    stats: dict[str, float] = {"triggered_groups": 1.0, "candidates": float(len(chosen))}
    improved = 0
    for c, answer in revisions:
        if answer.empty:
            stats["empty_revisions"] = stats.get("empty_revisions", 0.0) + 1
            continue
        original = group_score(group[c])
        improved += answer.reward > original
        stats["revision_reward_sum"] = stats.get("revision_reward_sum", 0.0) + answer.reward
        if opts.bonus:
            terms = dict(out[c].reward_terms)
            terms["herl_bonus"] = opts.alpha * (answer.reward - original)
            out[c] = attrs.evolve(out[c], reward_terms=terms)
    stats["revisions_improved"] = float(improved)
    best = max(group_score(s) for s in group)
    slot = rng.randrange(len(group))
    pick = choose_injection(best, revisions)
    context = "request" if opts.train_context == "revision" else "original"
    if pick is not None:
        candidate, answer = pick
        injected = scored_like_the_policy(
            answer_sample(
                answer,
                out[slot],
                kind="action",
                loss="shaped_ratio",
                context=context,
                meta={
                    "injected": "herl",
                    "shaped_gamma": opts.gamma,
                    "herl": {
                        "revision_of": group[candidate].trial_id,
                        "fallback": False,
                        "replaced": group[slot].trial_id,
                    },
                },
            ),
            out[slot],
        )
        stats["injected_revisions"] = 1.0
    else:
        # No revision reached the group's best: the best original answer is copied into the slot, as the code does.
        source = group[max(range(len(group)), key=lambda i: group_score(group[i]))]
        injected = attrs.evolve(
            source,
            trial_id=group[slot].trial_id,
            episode=group[slot].episode,
            turn=group[slot].turn,
            anchor=group[slot].anchor,
            loss="shaped_ratio",
            reward_terms={k: v for k, v in source.reward_terms.items() if k != "herl_bonus"},
            meta={
                **source.meta,
                "injected": "herl",
                "shaped_gamma": opts.gamma,
                "herl": {"revision_of": None, "fallback": True, "replaced": group[slot].trial_id},
            },
        )
        stats["injected_fallbacks"] = 1.0
    out[slot] = injected
    return AugmentResult(group=tuple(out), stats=stats)


@hookimpl
def augment_group(
    group: tuple[Sample, ...], task: GroupTask, options: Mapping[str, Mapping[str, Any]]
) -> Augmentation | None:
    opts = settings(options)
    if not group or max(group_score(s) for s in group) >= PERFECT:
        return None
    chosen = candidates(group, opts.max_candidates)
    if not opts.naive_prompt and any(rubric_lists(group[i]) is None for i in chosen):
        return None  # the arena reports no rubrics: nothing to show in hindsight (naive_prompt needs none)
    budget = opts.max_new_tokens or task.max_new_tokens
    requests = tuple(
        GenerationRequest(
            messages=(
                *system_messages(group[i]),
                ChatMessage("user", hindsight_prompt(group[i], naive=opts.naive_prompt)),
            ),
            segments=(Segment(temperature=opts.temperature),),
            max_new_tokens=budget,
            purpose="herl_revision",
        )
        for i in chosen
    )
    rng = random.Random(derive_seed(NAME, task.group_id, task.episode, task.iteration))

    def finish(current: tuple[Sample, ...], answers: tuple[tuple[ScoredAnswer, ...], ...]) -> AugmentResult:
        return finish_group(current, answers, chosen, opts, rng)

    return Augmentation(requests=requests, finish=finish, source=NAME)
