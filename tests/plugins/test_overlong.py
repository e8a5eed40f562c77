"""overlong: DAPO's soft overlong punishment, hand-computed at the boundaries, and its settings."""

from __future__ import annotations

from typing import Any

import pytest

from arena.core.api.errors import ConfigError
from arena.core.api.records import EpisodeRecord, TrialRecord, TrialSpec
from arena.core.api.samples import Sample
from arena.core.host.plugins import PluginSet
from arena.plugins import overlong
from arena.plugins.overlong import compute_rewards, settings, soft_overlong_penalty


def test_penalty_at_the_boundaries_dapo_sizes() -> None:
    # DAPO: L_max = 20480, L_cache = 4096, so the penalty starts after 16384 tokens.
    assert soft_overlong_penalty(0, 20480, 4096) == 0.0
    assert soft_overlong_penalty(16384, 20480, 4096) == 0.0
    assert soft_overlong_penalty(16385, 20480, 4096) == pytest.approx(-1 / 4096)
    assert soft_overlong_penalty(18432, 20480, 4096) == pytest.approx(-0.5)
    assert soft_overlong_penalty(20479, 20480, 4096) == pytest.approx(-4095 / 4096)
    assert soft_overlong_penalty(20480, 20480, 4096) == -1.0
    assert soft_overlong_penalty(20481, 20480, 4096) == -1.0


def test_penalty_small_budget_and_no_cache() -> None:
    # L_max 10, L_cache 4: free up to 6 tokens, then -1/4 per token.
    assert [soft_overlong_penalty(n, 10, 4) for n in range(5, 13)] == [0.0, 0.0, -0.25, -0.5, -0.75, -1.0, -1.0, -1.0]
    # No cache: nothing until the budget, -1 beyond it (no division by zero at the budget).
    assert soft_overlong_penalty(10, 10, 0) == 0.0 and soft_overlong_penalty(11, 10, 0) == -1.0
    # The whole budget as cache: linear from the first token.
    assert soft_overlong_penalty(0, 8, 8) == 0.0 and soft_overlong_penalty(2, 8, 8) == -0.25
    with pytest.raises(ValueError, match="cache"):
        soft_overlong_penalty(3, 8, 9)


def sample(kind: str, tokens: int, trial_id: str = "t0") -> Sample:
    return Sample(
        learner="agent",
        trial_id=trial_id,
        episode=0,
        turn=0,
        agent="player_0",
        kind=kind,
        context_ids=(1,),
        completion_ids=tuple(range(tokens)),
        behaviour_logprobs=(0.0,) * tokens,
        temperatures=(1.0,) * tokens,
        reward_terms={"env": 1.0},
    )


def trial(options: dict[str, Any] | None = None, max_new_tokens: int | None = 20) -> TrialRecord:
    meta = {} if max_new_tokens is None else {"max_new_tokens": max_new_tokens}
    spec = TrialSpec(trial_id="t0", arena_id="x", seats=("model:m",), seed=0, meta=meta, options=options or {})
    episode = EpisodeRecord(
        trial_id="t0", index=0, seed=0, steps=(), returns={"player_0": 1.0}, outcomes={"player_0": "win"},
        invalid_actions={"player_0": 0},
    )  # fmt: skip
    return TrialRecord(spec=spec, episodes=(episode,), reflections=())


def test_defaults_come_from_the_trial_budget() -> None:
    # max_length = 20 (the trial's max_new_tokens), cache = 20 // 5 = 4: free up to 16 tokens.
    samples = [sample("action", 16), sample("action", 18), sample("action", 20), sample("reflection:mage", 20)]
    terms = compute_rewards(trial(), samples)
    assert terms == {0: {"overlong": 0.0}, 1: {"overlong": -0.5}, 2: {"overlong": -1.0}}  # reflections untouched


def test_options_override_length_cache_coef_and_kinds() -> None:
    options = {"overlong": {"max_length": 10, "cache": 2, "coef": 0.5, "kinds": ["action", "reflection:mage"]}}
    samples = [sample("action", 9), sample("reflection:mage", 12), sample("tip", 12)]
    terms = compute_rewards(trial(options, max_new_tokens=None), samples)
    assert terms == {0: {"overlong": pytest.approx(-0.25)}, 1: {"overlong": -0.5}}


def test_missing_budget_names_the_option() -> None:
    with pytest.raises(ConfigError, match=r"options\.overlong\.max_length"):
        compute_rewards(trial(max_new_tokens=None), [sample("action", 3)])


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (
            {"max_len": 10},
            r"unknown key 'options\.overlong\.max_len' \(did you mean 'max_length'\?\); "
            "expected one of: max_length, cache, coef, kinds",
        ),
        ({"max_length": "long"}, r"key 'options\.overlong\.max_length' expects int \| None, got str 'long'"),
        ({"max_length": 0}, "'max_length' must be >= 1: 0"),
        ({"cache": -1}, "'cache' must be >= 0: -1"),
        ({"max_length": 10, "cache": 11}, r"cache must be between 0 and max_length \(10\), got 11"),
        ({"cache": 21}, r"cache must be between 0 and max_length \(20\), got 21"),  # against the trial's budget
        ({"coef": "big"}, r"key 'options\.overlong\.coef' expects float, got str 'big'"),
        ({"kinds": "action"}, r"key 'options\.overlong\.kinds' expects tuple\[str, \.\.\.\]"),
    ],
)
def test_bad_settings_are_config_errors(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings({"overlong": given}, 20)


def test_a_penalty_reaches_the_sample_reward_through_the_plugin_set() -> None:
    plugins = PluginSet(["overlong"], {"overlong": overlong})
    samples = [sample("action", 19)]
    terms, *_ = plugins.call("compute_rewards", trial=trial(), samples=samples)
    assert terms == {0: {"overlong": -0.75}}
