"""Trial semantics: restarts from the same seed, invalid-answer policies, early stop, determinism."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from arena.core.api.backend import GenerationRequest
from arena.core.api.errors import ArenaError
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.backends.scripted import random_legal_responder
from arena.core.config.trial import InvalidActionConfig, TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine

from .helpers import play, scripted_pool, specs


def gibberish(request: GenerationRequest, rng: np.random.Generator) -> str:
    return "I refuse to answer with a move."


def test_every_episode_restarts_from_the_same_deal() -> None:
    (trial,), _, _ = play(specs(1, seats=("model:scripted", "random"), episodes=3))
    first_observations = [e.steps[0].observation for e in trial.episodes]
    assert len(set(first_observations)) == 1  # same private card each episode
    assert "Your card" in first_observations[0]


def test_forfeit_policy_scores_and_counts() -> None:
    (trial,), _, _ = play(specs(1), responder=gibberish)
    episode = trial.final
    assert episode.forfeited_by == "player_0"
    assert episode.returns == {"player_0": -1.5, "player_1": 0.5}
    assert episode.outcomes == {"player_0": "loss", "player_1": "win"}
    assert episode.invalid_actions == {"player_0": 1, "player_1": 0}
    assert episode.steps[-1].invalid and episode.steps[-1].error


def test_retry_policy_reprompts_then_forfeits() -> None:
    config = TrialConfig(invalid_action=InvalidActionConfig(policy="retry", retries=2))
    (trial,), backend, _ = play(specs(1), config=config, responder=gibberish)
    assert trial.final.invalid_actions["player_0"] == 3
    assert trial.final.steps[-1].attempts == 3
    assert trial.final.forfeited_by == "player_0"
    assert "not a legal move" in trial.final.steps[-1].prompt[-1].content
    assert len(backend.batch_sizes) == 3


def test_retry_policy_succeeds_on_a_later_attempt() -> None:
    def second_time_lucky(request: GenerationRequest, rng: np.random.Generator) -> str:
        if "not a legal move" in request.messages[-1].content:
            return random_legal_responder(request, rng)
        return "hmm"

    config = TrialConfig(invalid_action=InvalidActionConfig(policy="retry", retries=1))
    (trial,), _, _ = play(specs(1), config=config, responder=second_time_lucky)
    first = trial.final.steps[0]
    assert not first.invalid and first.attempts == 2 and first.invalid_answers == 1
    assert trial.final.forfeited_by is None
    assert trial.final.invalid_actions["player_0"] == sum(s.invalid_answers for s in trial.final.steps)


def test_random_policy_plays_on_and_counts() -> None:
    config = TrialConfig(invalid_action=InvalidActionConfig(policy="random"))
    (trial,), _, _ = play(
        specs(1, arena="tic_tac_toe", seats=("model:scripted", "random")), config=config, responder=gibberish
    )
    episode = trial.final
    assert episode.forfeited_by is None
    llm_steps = [s for s in episode.steps if s.agent == "player_0"]
    assert all(s.invalid and s.action is not None for s in llm_steps)
    assert episode.invalid_actions["player_0"] == len(llm_steps)


def test_early_stop_on_win() -> None:
    records, _, _ = play(specs(30, episodes=3, early_stop_on_win=True))
    for trial in records:
        won_at = [e.index for e in trial.episodes if e.outcomes["player_0"] == "win"]
        if won_at:
            assert trial.final.index == won_at[0]
        else:
            assert len(trial.episodes) == 3
    assert any(len(t.episodes) < 3 for t in records)


def co_evolution_specs(n: int, learner_seat: int) -> list[TrialSpec]:
    """A learner (``model:scripted``) against another LLM (``model:rival@scripted``), as a co-evolving learner or
    a snapshot sits in the training pool."""
    seats = ("model:scripted", "model:rival@scripted")
    meta = {"learner": "alice", "learner_seat": learner_seat}
    return [
        TrialSpec(
            trial_id=f"t{i}", arena_id="kuhn_poker", seats=seats, seed=i, episodes=3, early_stop_on_win=True, meta=meta
        )
        for i in range(n)
    ]


def play_two_llms(trial_specs: list[TrialSpec]) -> list[TrialRecord]:
    pool, backend = scripted_pool()
    pool.add("scripted", "rival", backend)
    return RolloutEngine(PluginSet([]), backends=pool).run(trial_specs)


@pytest.mark.parametrize("learner_seat", [0, 1])
def test_early_stop_follows_the_trained_seat_against_an_llm_opponent(learner_seat: int) -> None:
    # Before the fix any LLM seat's win stopped the trial, and with two LLM seats one of them wins every decisive
    # Kuhn episode: every trial stopped after episode 1 and MAGE's multi-episode training switched off.
    records = play_two_llms(co_evolution_specs(40, learner_seat))
    learner = f"player_{learner_seat}"
    for trial in records:
        won_at = [e.index for e in trial.episodes if e.outcomes[learner] == "win"]
        assert len(trial.episodes) == (won_at[0] + 1 if won_at else 3)
    assert any(len(t.episodes) == 3 for t in records)
    assert sum(len(t.episodes) for t in records) > 1.5 * len(records)


def test_a_trial_of_two_trained_seats_plays_every_episode() -> None:
    # A learner against itself (both seats hold its spec) cannot win for both seats at once: it keeps playing.
    pool, _ = scripted_pool()
    trial_specs = [
        attrs.evolve(s, seats=("model:scripted", "model:scripted")) for s in co_evolution_specs(20, learner_seat=0)
    ]
    records = RolloutEngine(PluginSet([]), backends=pool).run(trial_specs)
    assert [len(t.episodes) for t in records] == [3] * 20


def test_runs_are_repeatable() -> None:
    a, _, _ = play(specs(10, episodes=2), plugins=["reflection"])
    b, _, _ = play(specs(10, episodes=2), plugins=["reflection"])
    assert [[e.returns for e in t.episodes] for t in a] == [[e.returns for e in t.episodes] for t in b]
    assert [[r.content for r in t.reflections] for t in a] == [[r.content for r in t.reflections] for t in b]


def test_reflections_reach_the_next_episode_prompt() -> None:
    (trial,), _, _ = play(specs(1, episodes=2), plugins=["reflection"])
    assert len(trial.reflections) == 1 and trial.reflections[0].content.startswith("Scripted reflection")
    second_prompt = next(s for s in trial.episodes[1].steps if s.completion is not None).prompt[-1].content
    assert "Your reflections on earlier episodes of this trial:" in second_prompt
    assert trial.reflections[0].content in second_prompt


def test_wrong_number_of_seats_is_a_clear_error() -> None:
    with pytest.raises(ArenaError, match="has 2 seat"):
        play(specs(1, seats=("random",)))


def test_opponent_for_another_arena_is_refused() -> None:
    with pytest.raises(ArenaError, match="mcts"):
        play(specs(1, seats=("mcts:10", "random")))


def test_a_prompt_never_shows_another_seats_private_observation() -> None:
    # Both seats are LLMs: the second seat's prompt lists the first seat's move, never the card it saw then.
    (trial,), _, _ = play(specs(1, seats=("model:scripted", "model:scripted")))
    steps = trial.final.steps
    assert len(steps) >= 2 and steps[0].agent != steps[1].agent
    own_card = steps[0].observation.splitlines()[0]
    second_prompt = steps[1].prompt[-1].content
    assert own_card.startswith("Your card:") and "What you saw then" not in second_prompt
    assert steps[1].observation.splitlines()[0] in second_prompt  # its own card is there


def test_random_fallback_moves_differ_between_episodes() -> None:
    config = TrialConfig(invalid_action=InvalidActionConfig(policy="random"))
    records, _, _ = play(
        specs(8, arena="tic_tac_toe", seats=("model:scripted", "random"), episodes=2),
        config=config,
        responder=gibberish,
    )

    def fallback_moves(episode):
        return [s.move for s in episode.steps if s.agent == "player_0"]

    assert any(fallback_moves(t.episodes[0]) != fallback_moves(t.episodes[1]) for t in records)


def test_play_dump_carries_each_llm_prompt() -> None:
    from arena.core.rollout.play import trial_to_json

    from .helpers import play, specs

    (trial,), _, _ = play(specs(1, arena="kuhn_poker", seats=("model:scripted", "conservative"), episodes=2))
    dumped = trial_to_json(trial)
    steps = [s for e in dumped["episodes"] for s in e["steps"]]
    llm = [s for s in steps if s["agent"] == "player_0"]
    assert llm and all(s["prompt"] and s["prompt"][-1]["role"] == "user" for s in llm)
    assert all(s["prompt"] is None for s in steps if s["agent"] == "player_1")
    assert "episode 2 of 2" in next(s for s in dumped["episodes"][1]["steps"] if s["prompt"])["prompt"][-1]["content"]
