"""Answers that are empty, endless or not UTF-8-clean never crash the loop: cut, parsed, counted."""

from __future__ import annotations

import numpy as np
import pytest

from arena.core.api.backend import GenerationRequest
from arena.core.backends.scripted import random_legal_responder
from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig

from .helpers import play, specs


def empty(request: GenerationRequest, rng: np.random.Generator) -> str:
    return ""


def endless(request: GenerationRequest, rng: np.random.Generator) -> str:
    return "I keep thinking " * 10_000


def broken_bytes(request: GenerationRequest, rng: np.random.Generator) -> str:
    return "caf\udce9 \ud800 \x00\x07 <action>\udcff</action>"


def legal_after_noise(request: GenerationRequest, rng: np.random.Generator) -> str:
    return "\ud800\x00 é" + random_legal_responder(request, rng)


@pytest.mark.parametrize("responder", [empty, endless, broken_bytes])
@pytest.mark.parametrize("arena", ["kuhn_poker", "tic_tac_toe", "rock_paper_scissors"])
def test_odd_answers_are_invalid_not_fatal(responder, arena: str) -> None:
    opponent = {"kuhn_poker": "random", "tic_tac_toe": "random", "rock_paper_scissors": "rps-cycle"}[arena]
    config = TrialConfig(
        invalid_action=InvalidActionConfig(policy="retry", retries=1), prompt=PromptConfig(max_new_tokens=64)
    )
    records, _, _ = play(
        specs(4, arena=arena, seats=("model:scripted", opponent), episodes=2), config=config, responder=responder
    )
    for trial in records:
        for episode in trial.episodes:
            assert episode.forfeited_by == "player_0"
            assert episode.invalid_actions["player_0"] == 2  # the answer and its one retry
            step = [s for s in episode.steps if s.agent == "player_0"][-1]
            assert step.completion is not None and len(step.completion.token_ids) <= 64
            assert step.error


def test_noise_around_a_legal_answer_still_parses() -> None:
    records, _, _ = play(specs(8, arena="tic_tac_toe", seats=("model:scripted", "random")), responder=legal_after_noise)
    assert all(t.final.forfeited_by is None for t in records)
    assert sum(t.final.invalid_actions["player_0"] for t in records) == 0
