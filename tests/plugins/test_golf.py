"""GOLF's aggregation, refiner group, adaptive injection and threshold rules on hand-made groups."""

from __future__ import annotations

import attrs
import pytest

from arena.core.api.errors import ConfigError
from arena.plugins import golf
from tests.plugins.augment_helpers import TASK, answer, sample

T, F = True, False


def plan(group, task=TASK, **options):  # type: ignore[no-untyped-def]
    return golf.augment_group(group=tuple(group), task=task, options={"golf": options})


def test_no_refinement_when_nothing_failed() -> None:
    assert plan([sample(0, (T, T, T)), sample(1, (T, T, T))]) is None


def test_aggregated_prompt_lists_failed_attempts_shortest_first_with_scores_and_critiques() -> None:
    group = [
        sample(0, (T, T, T), text="perfect answer"),
        sample(1, (T, F, F), text="a rather long failed attempt " * 3),
        sample(2, (T, T, F), text="short try"),
    ]
    aug = plan(group, n=4)
    assert aug is not None and len(aug.requests) == 1
    request = aug.requests[0]
    assert request.n == 4 and request.purpose == "golf_refinement" and request.segments[0].temperature == 1.0
    text = request.messages[-1].content
    assert "perfect answer" not in text  # only failures are shown
    assert text.index("short try") < text.index("a rather long failed attempt")
    assert "Attempt 1 (score 0.67):\nshort try\nFeedback:\nUnmet: End with 'Bye.'" in text
    assert "Output only the improved answer. Reply with the response only." in text


def test_feedback_modes_and_budget() -> None:
    group = [sample(0, (T, F, F), text="first attempt"), sample(1, (F, F, F), text="second attempt is longer")]
    critiques, _ = golf.refinement_prompt(tuple(group), "critiques", 6000)
    assert "first attempt" not in critiques and "Feedback:" in critiques
    attempts, _ = golf.refinement_prompt(tuple(group), "attempts", 6000)
    assert "first attempt" in attempts and "Feedback:" not in attempts
    _, shown = golf.refinement_prompt(tuple(group), "both", 10)
    assert shown == 1  # the budget keeps only the shortest attempt, but always one


def test_refiner_group_is_its_own_on_policy_group_with_the_feedback_prompt() -> None:
    group = tuple(sample(k, (F, F, F)) for k in range(4))
    aug = plan(group, n=3)
    assert aug is not None
    refinements = (answer("r one", 1 / 3, prompt=(5, 5)), answer("", 0.0), answer("r three", 2 / 3, prompt=(5, 5)))
    result = aug.finish(group, (refinements,))
    assert len(result.extra) == 2  # the empty refinement is not trained
    for s in result.extra:
        assert s.group_id == "g0/golf-e0" and s.kind == "refinement" and s.loss == "ppo"
        assert s.context_ids == (5, 5) and s.context_text == "REVISION PROMPT"
        assert "injected" not in s.meta
    assert [s.reward for s in result.extra] == [pytest.approx(1 / 3), pytest.approx(2 / 3)]
    assert len({s.trial_id for s in result.extra}) == 2
    assert result.group == group  # no perfect refinement: nothing injected


def test_injection_below_threshold_uses_the_original_prompt_and_reward_one() -> None:
    group = tuple(sample(k, (F, T, F)) for k in range(8))
    aug = plan(group, n=2)
    assert aug is not None
    result = aug.finish(group, ((answer("fixed it", 1.0), answer("nearly", 2 / 3)),))
    injected = [s for s in result.group if s.meta.get("injected") == "golf"]
    assert len(injected) == 1
    inj = injected[0]
    assert inj.context_ids == (1, 2, 3) and inj.rollout_context_ids == (7, 8, 9)  # original prompt as context
    assert inj.reward == 1.0 and inj.loss == "shaped_prob" and inj.meta["shaped_gamma"] == 0.1
    assert inj.completion_text == "fixed it" and result.stats["injections"] == 1.0


def test_no_injection_at_or_above_the_threshold() -> None:
    # coding: ⌈0.125·8⌉ = 1 correct answer suffices; instruct: ⌈0.25·8⌉ = 2
    group = tuple(sample(k, (T, T, T) if k == 0 else (F, F, F)) for k in range(8))
    refinements = ((answer("fixed", 1.0),),)
    coding = attrs.evolve(TASK, arena_id="coding")
    result = plan(group, task=coding, n=1).finish(group, refinements)  # type: ignore[union-attr]
    assert not any(s.meta.get("injected") for s in result.group)
    result = plan(group, task=TASK, n=1).finish(group, refinements)  # type: ignore[union-attr]
    assert sum(bool(s.meta.get("injected")) for s in result.group) == 1
    result = plan(group, task=TASK, n=1, threshold=0.1).finish(group, refinements)  # type: ignore[union-attr]
    assert not any(s.meta.get("injected") for s in result.group)


def test_injection_replaces_a_wrong_answer_only() -> None:
    group = tuple(sample(k, (T, T, T) if k % 2 else (F, F, F)) for k in range(8))  # 4 correct, instruct: 2 needed
    result = plan(group, n=1, threshold=1.0).finish(group, ((answer("fixed", 1.0),),))  # type: ignore[union-attr]
    replaced = [i for i, (a, b) in enumerate(zip(group, result.group, strict=True)) if a is not b]
    assert len(replaced) == 1 and replaced[0] % 2 == 0


def test_all_empty_refinements_pass_through_with_a_warning() -> None:
    group = tuple(sample(k, (F, F, F)) for k in range(3))
    result = plan(group, n=2).finish(group, ((answer("", 0.0), answer("", 0.0)),))  # type: ignore[union-attr]
    assert result.group == group and not result.extra and result.warnings


def test_switches() -> None:
    group = tuple(sample(k, (F, F, F)) for k in range(3))
    result = plan(group, n=1, train_refiner=False, inject=False).finish(  # type: ignore[union-attr]
        group, ((answer("fixed", 1.0),),)
    )
    assert not result.extra and result.group == group
    with pytest.raises(ConfigError):
        plan(group, feedback="nothing")
