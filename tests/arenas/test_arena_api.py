"""PettingZoo API conformance and seeding of the built-in arenas."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test, parallel_api_test

from arena.arenas.builtin_plugin import OPENSPIEL_GAMES
from arena.arenas.openspiel_arenas import OpenSpielArena
from arena.arenas.rps import RockPaperScissorsEnv

OPENSPIEL_IDS = tuple(OPENSPIEL_GAMES)

pytestmark = pytest.mark.filterwarnings("ignore:.*observation space value is.*infinity:UserWarning")


def test_registers_every_builtin(factories: dict[str, Any]) -> None:
    assert set(factories) == {
        *OPENSPIEL_IDS,
        "rock_paper_scissors",
        "text_maze",
        "doors",
        "vault",
        "menu",
        "coding",
        "instruct",
    }


@pytest.mark.parametrize("arena_id", OPENSPIEL_IDS)
def test_openspiel_api(factories: dict[str, Any], arena_id: str) -> None:
    env = factories[arena_id]()
    api_test(env, num_cycles=30)
    assert env.unwrapped.arena_text_adapter is not None


def test_rps_parallel_api(factories: dict[str, Any]) -> None:
    parallel_api_test(factories["rock_paper_scissors"](rounds=3), num_cycles=10)


def test_game_parameters_reach_pyspiel(factories: dict[str, Any]) -> None:
    env = factories["kuhn_poker"](players=3)
    env.reset(seed=0)
    assert env.possible_agents == ["player_0", "player_1", "player_2"]
    assert env.unwrapped.game_state.get_game().num_players() == 3


def test_copies_keep_the_config() -> None:
    env = OpenSpielArena("kuhn_poker", config={"players": 3})
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert clone.possible_agents == env.possible_agents
        assert type(clone.arena_text_adapter) is type(env.arena_text_adapter)


def test_unknown_game_is_rejected() -> None:
    with pytest.raises(ValueError, match="no text adapter"):
        OpenSpielArena("chess")


def _random_episode(env: Any, seed: int, rng: np.random.Generator) -> list[int]:
    """Play random legal moves to the end; return the pyspiel history (chance outcomes included)."""
    env.reset(seed=seed)
    for _agent in env.agent_iter(200):
        _, _, term, trunc, info = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(info["action_mask"]))))
    state = env.unwrapped.game_state
    assert state.is_terminal(), "episodes must run to the real end (no early truncation)"
    return [int(a) for a in state.history()]


def _chance_outcomes(history_items: Any) -> list[int]:
    return [item.action for item in history_items if item.player < 0]


@pytest.mark.parametrize("arena_id", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_same_seed_same_deal(factories: dict[str, Any], arena_id: str) -> None:
    env = factories[arena_id]()
    deals = []
    for play_seed in range(4):  # different moves in between must not change the next deal
        _random_episode(env, seed=123, rng=np.random.default_rng(play_seed))
        env.reset(seed=123)
        deals.append(_chance_outcomes(env.unwrapped.game_state.full_history()))
    other = factories[arena_id]()
    other.reset(seed=123)
    deals.append(_chance_outcomes(other.unwrapped.game_state.full_history()))
    assert all(d == deals[0] for d in deals), deals


@pytest.mark.parametrize("arena_id", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_same_seed_and_moves_same_episode(factories: dict[str, Any], arena_id: str) -> None:
    env = factories[arena_id]()
    first = _random_episode(env, seed=5, rng=np.random.default_rng(9))
    assert _random_episode(env, seed=5, rng=np.random.default_rng(9)) == first  # later chance nodes too


@pytest.mark.parametrize("arena_id", ["kuhn_poker", "leduc_poker", "liars_dice"])
def test_different_seeds_different_deals(factories: dict[str, Any], arena_id: str) -> None:
    env = factories[arena_id]()
    deals = set()
    for seed in range(10):
        env.reset(seed=seed)
        deals.add(tuple(_chance_outcomes(env.unwrapped.game_state.full_history())))
    assert len(deals) > 1


def test_kuhn_plays_to_the_end_not_truncated(factories: dict[str, Any], play: Any) -> None:
    # shimmy alone truncates Kuhn after the first move (its game_length counts chance nodes).
    env = factories["kuhn_poker"]()
    env.reset(seed=0)
    play(env, [0, 1, 1])  # pass, bet, call
    state = env.unwrapped.game_state
    assert state.is_terminal()
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert sorted(env.rewards.values()) == [-2.0, 2.0]


def test_rps_rewards_and_history() -> None:
    env = RockPaperScissorsEnv(rounds=2)
    obs, infos = env.reset(seed=0)
    assert set(infos) == {"player_0", "player_1"}
    assert (obs["player_0"] == -1).all()
    obs, rewards, terms, truncs, _ = env.step({"player_0": 1, "player_1": 0})  # paper beats rock
    assert rewards == {"player_0": 1.0, "player_1": -1.0}
    assert obs["player_1"][0].tolist() == [0, 1] and obs["player_1"][1].tolist() == [-1, -1]
    assert not any(terms.values())
    _, rewards, terms, truncs, _ = env.step({"player_0": 2, "player_1": 2})
    assert rewards == {"player_0": 0.0, "player_1": 0.0}
    assert all(terms.values()) and not any(truncs.values()) and env.agents == []


@pytest.mark.parametrize("arena_id", OPENSPIEL_IDS)
def test_rewards_summed_from_last_equal_the_returns(factories: dict[str, Any], arena_id: str) -> None:
    # The usual AEC loop sums ``last()`` rewards; shimmy alone credits the last agent's final reward twice.
    env = factories[arena_id]()
    rng = np.random.default_rng(0)
    for seed in range(5):
        env.reset(seed=seed)
        totals = dict.fromkeys(env.possible_agents, 0.0)
        for agent in env.agent_iter(200):
            _, reward, term, trunc, info = env.last()
            totals[agent] += reward
            env.step(None if term or trunc else int(rng.choice(np.flatnonzero(info["action_mask"]))))
        returns = env.unwrapped.game_state.returns()
        assert [totals[a] for a in env.possible_agents] == pytest.approx(returns)
