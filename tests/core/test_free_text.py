"""The engine's free-text path (``parse_answer``, ``answer_format``, ``episode_details``) and reflections after
the final episode, on the tiny ``guess_digit`` test arena."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from arena.core.api.backend import ChatMessage, GenerationRequest
from arena.core.api.markers import hookimpl
from arena.core.api.records import ReflectionRequest
from arena.core.host import catalog

from .free_text_env import ARENA_ID, register_guess_arena
from .helpers import play, specs


@pytest.fixture(autouse=True)
def guess_arena() -> Iterator[None]:
    register_guess_arena()
    yield
    catalog.reset()


def always(answer: str) -> Any:
    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        return answer

    return responder


def test_free_text_answer_becomes_the_env_action() -> None:
    trial_specs = specs(3, arena=ARENA_ID, seats=("model:scripted",))
    trials, _, _ = play(trial_specs, responder=always("<answer>1</answer>"))
    for trial in trials:
        (step,) = trial.final.steps
        assert step.action == "1" and step.move == "guess 1" and not step.invalid
        won = trial.spec.seed == 1
        assert trial.final.outcomes["player_0"] == ("win" if won else "loss")
        assert trial.final.details["player_0"] == {
            "task_id": f"digit-{trial.spec.seed}",
            "outcome_key": "1",
            "score": float(won),
        }
        assert trial.final.summaries["player_0"] == f"The digit was {trial.spec.seed}; you guessed 1."
    prompt = trials[0].final.steps[0].prompt[-1].content
    assert prompt.rstrip().endswith("Answer with one digit inside <answer>...</answer>.")
    assert "Legal moves:" not in prompt and "<action>MOVE</action>" not in prompt


def test_unusable_free_text_answer_forfeits_even_under_the_random_policy() -> None:
    from arena.core.config.trial import InvalidActionConfig, TrialConfig

    config = TrialConfig(invalid_action=InvalidActionConfig(policy="random"))
    (trial,), _, _ = play(specs(1, arena=ARENA_ID, seats=("model:scripted",)), config=config, responder=always("?"))
    (step,) = trial.final.steps
    assert step.invalid and step.error == "no <answer> digit" and step.action is None
    assert trial.final.forfeited_by == "player_0"


def test_retry_note_for_free_text_does_not_mention_moves() -> None:
    from arena.core.config.trial import InvalidActionConfig, TrialConfig

    answers = iter(["?", "<answer>0</answer>"])

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        return next(answers)

    config = TrialConfig(invalid_action=InvalidActionConfig(policy="retry", retries=1))
    (trial,), _, _ = play(specs(1, arena=ARENA_ID, seats=("model:scripted",)), config=config, responder=responder)
    (step,) = trial.final.steps
    assert step.attempts == 2 and not step.invalid and step.action == "0"
    assert "could not be used (no <answer> digit)" in step.prompt[-1].content
    assert "legal move" not in step.prompt[-1].content


class TipAfterEveryEpisode:
    """Asks for a tip after every episode, as EMPO² does; records the ``last`` flags it saw."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, bool]] = []

    @hookimpl
    def reflect(self, episode: Any, last: bool) -> ReflectionRequest:
        self.seen.append((episode.index, last))
        return ReflectionRequest(name="tip", messages=(ChatMessage("user", "tip?"),), extract_tag="tip", trained=False)


def test_reflect_is_called_after_the_final_episode_with_last_true() -> None:
    plugin = TipAfterEveryEpisode()
    (trial,), _, _ = play(
        specs(1, arena=ARENA_ID, seats=("model:scripted",), episodes=3),
        plugins=["tips"],
        extra={"tips": plugin},
        responder=always("<answer>5</answer> <tip>try 0</tip>"),
    )
    assert plugin.seen == [(0, False), (1, False), (2, True)]
    assert [r.episode for r in trial.reflections] == [0, 1, 2]
    assert {r.content for r in trial.reflections} == {"try 0"}


def test_early_stop_on_win_reflects_once_with_last_true() -> None:
    plugin = TipAfterEveryEpisode()
    play(
        specs(1, arena=ARENA_ID, seats=("model:scripted",), episodes=3, early_stop_on_win=True),
        plugins=["tips"],
        extra={"tips": plugin},
        responder=always("<answer>0</answer>"),  # seed 0: the first guess wins
    )
    assert plugin.seen == [(0, True)]
