"""HeRL's trigger, candidate, bonus, injection and fallback rules on hand-made groups."""

from __future__ import annotations

import attrs
import pytest

from arena.core.api.errors import ConfigError
from arena.plugins import herl
from tests.plugins.augment_helpers import TASK, answer, sample

T, F = True, False


def plan(group, **options):  # type: ignore[no-untyped-def]
    return herl.augment_group(group=tuple(group), task=TASK, options={"herl": options})


def test_no_trigger_when_a_response_is_perfect() -> None:
    assert plan([sample(0, (T, T, T)), sample(1, (F, F, F))]) is None


def test_candidates_are_the_answers_tied_at_the_best_score() -> None:
    group = [sample(0, (T, F, F)), sample(1, (T, T, F)), sample(2, (F, T, T)), sample(3, (F, F, F))]
    assert herl.candidates(tuple(group), 16) == [1, 2]
    assert herl.candidates(tuple(group), 1) == [1]
    aug = plan(group)
    assert aug is not None and len(aug.requests) == 2
    request = aug.requests[0]
    assert request.segments[0].temperature == 0.3
    assert request.purpose == "herl_revision"
    assert request.messages[0].role == "system"  # the original system prompt is kept
    text = request.messages[-1].content
    assert "already satisfies (keep them satisfied):\n- Use at most 10 words.\n- Mention a cat." in text
    assert "does not satisfy yet (fix them):\n- End with 'Bye.'" in text
    assert "Draft:\ndraft 1" in text and "add no new facts" in text
    assert text.endswith("Reply with the response only.")  # the arena's answer format closes the prompt


def test_naive_prompt_omits_the_rubric_status() -> None:
    aug = plan([sample(0, (T, F, F)), sample(1, (F, F, F))], naive_prompt=True)
    assert aug is not None
    text = aug.requests[0].messages[-1].content
    assert "satisf" not in text and "Draft:\ndraft 0" in text


def test_groups_without_rubrics_are_left_alone_unless_naive() -> None:
    s = sample(0, (T, F, F))

    bare = attrs.evolve(s, meta={"details": {"score": 1 / 3}})
    assert plan([bare, bare]) is None
    assert plan([bare, bare], naive_prompt=True) is not None


def test_bonus_only_on_candidates_and_better_revision_injected() -> None:
    group = (sample(0, (T, F, F)), sample(1, (T, T, F)), sample(2, (F, T, T)), sample(3, (F, F, F)))
    aug = plan(group)
    assert aug is not None
    # candidate 1 revised to 1.0 (beats the best 2/3), candidate 2 to 1/3 (worse)
    result = aug.finish(group, ((answer("a revised note", 1.0),), (answer("worse", 1 / 3),)))
    by_trial = {s.trial_id: s for s in result.group}
    assert result.stats["injected_revisions"] == 1.0 and result.stats["revisions_improved"] == 1.0
    injected = [s for s in result.group if s.meta.get("injected") == "herl"]
    assert len(injected) == 1
    inj = injected[0]
    assert inj.completion_text == "a revised note" and inj.loss == "shaped_ratio"
    assert inj.meta["shaped_gamma"] == 1.0 and inj.reward_terms == {"env": 1.0}
    assert inj.context_ids == (7, 8, 9) and inj.context_text == "REVISION PROMPT"  # train_context: revision
    # Issue 22, defect 5: trained as the authors' code does, at the policy's sampling temperature (the replaced
    # rollout's T 1, not the revision's T 0.3) against a π_old the policy recomputes in the training context.
    assert inj.temperatures == (1.0, 1.0, 1.0)
    assert inj.recompute_old and inj.old_context == "train"
    slot = inj.trial_id
    # bonus terms: α·(R' − R) on the candidates still in the group, on nobody else
    for trial, expected in (("g0-t1", 0.05 * (1.0 - 2 / 3)), ("g0-t2", 0.05 * (1 / 3 - 2 / 3))):
        if trial != slot:
            assert by_trial[trial].reward_terms["herl_bonus"] == pytest.approx(expected)
    for trial in ("g0-t0", "g0-t3"):
        if trial != slot:
            assert "herl_bonus" not in by_trial[trial].reward_terms
    assert len(result.group) == len(group)


def test_tied_revision_is_injected_when_none_beats_the_best() -> None:
    group = (sample(0, (T, F, F)), sample(1, (F, F, F)))
    aug = plan(group)
    assert aug is not None
    result = aug.finish(group, ((answer("same score", 1 / 3),),))
    injected = [s for s in result.group if s.meta.get("injected")]
    assert [s.completion_text for s in injected] == ["same score"]
    assert injected[0].meta["herl"]["fallback"] is False


def test_fallback_copies_the_best_original_when_every_revision_is_worse() -> None:
    group = (sample(0, (T, T, F), text="best draft"), sample(1, (F, F, F)), sample(2, (F, F, F)))
    aug = plan(group)
    assert aug is not None
    result = aug.finish(group, ((answer("worse", 0.0),),))
    injected = [s for s in result.group if s.meta.get("injected")]
    assert len(injected) == 1 and injected[0].completion_text == "best draft"
    assert injected[0].meta["herl"]["fallback"] is True and injected[0].loss == "shaped_ratio"
    assert "herl_bonus" not in injected[0].reward_terms
    assert result.stats["injected_fallbacks"] == 1.0


def test_original_train_context_keeps_the_task_prompt() -> None:
    group = (sample(0, (T, F, F)), sample(1, (F, F, F)))
    aug = plan(group, train_context="original", gamma=0.1)
    assert aug is not None
    result = aug.finish(group, ((answer("better text", 2 / 3),),))
    inj = next(s for s in result.group if s.meta.get("injected"))
    assert inj.context_ids == (1, 2, 3) and inj.rollout_context_ids == (7, 8, 9)
    assert inj.rollout_context_text == "REVISION PROMPT" and inj.meta["shaped_gamma"] == 0.1
    # π_old from the original prompt (the training context) at T 1, not from the revision prompt at T 0.3.
    assert inj.recompute_old and inj.old_context == "train" and inj.temperatures == (1.0, 1.0)


def test_all_empty_revisions_leave_the_group_unchanged_with_a_warning() -> None:
    group = (sample(0, (T, F, F)), sample(1, (T, F, F)))
    aug = plan(group)
    assert aug is not None
    result = aug.finish(group, ((answer("", 0.0),), (answer("", 0.0),)))
    assert result.group == group and result.warnings and not result.extra


def test_bonus_switch_and_injection_slot_is_seeded() -> None:
    group = (sample(0, (T, F, F)), sample(1, (T, F, F)), sample(2, (F, F, F)))
    answers = ((answer("r0", 2 / 3),), (answer("r1", 1 / 3),))
    first = plan(group, bonus=False).finish(group, answers)  # type: ignore[union-attr]
    second = plan(group, bonus=False).finish(group, answers)  # type: ignore[union-attr]
    assert all("herl_bonus" not in s.reward_terms for s in first.group)
    assert [s.trial_id for s in first.group if s.meta.get("injected")] == [
        s.trial_id for s in second.group if s.meta.get("injected")
    ]


def test_bad_settings_are_errors() -> None:
    with pytest.raises(ConfigError):
        plan([sample(0, (T, F, F))], train_context="elsewhere")
    with pytest.raises(ConfigError):
        plan([sample(0, (T, F, F))], alpah=0.1)
