"""The doors arena: PettingZoo API, the trial seed fixing the prize, nothing secret in the observation, the text."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena.arenas.doors import SCOUT, DoorsEnv, prize_door
from arena.core.api.arena import SeatView
from arena.core.rollout.text_adapter import parse_action

pytestmark = pytest.mark.filterwarnings("ignore:.*(Observation|observation).*:UserWarning")


def _view(env: DoorsEnv) -> SeatView:
    obs, _, _, _, info = env.last()
    return SeatView(env=env, agent="player_0", seat=0, observation=obs, action_mask=np.asarray(info["action_mask"]))


@pytest.mark.parametrize("doors", [2, 10])
def test_api(doors: int) -> None:
    api_test(DoorsEnv(doors=doors), num_cycles=20)


def test_registered_and_listed(factories: dict[str, Any]) -> None:
    env = factories["doors"](doors=6)
    env.reset(seed=1)
    assert env.doors == 6 and env.unwrapped.arena_text_adapter is not None
    from arena.arenas import list_arenas

    info = {a.arena_id: a for a in list_arenas()}["doors"]
    assert (info.api, info.num_players, info.source) == ("aec", 1, "arena:doors")


def test_the_seed_fixes_the_prize_and_seeds_spread_it() -> None:
    env = DoorsEnv(doors=10)
    for seed in range(20):
        env.reset(seed=seed)
        first = env.prize
        env.step(3)
        env.reset(seed=seed)
        assert env.prize == first == prize_door(seed, 10)
    counts = np.bincount([prize_door(s, 10) for s in range(5000)], minlength=11)[1:]
    assert counts.min() > 400 and counts.max() < 600  # 500 expected per door


def test_rewards_and_summaries() -> None:
    env = DoorsEnv(doors=5)
    env.reset(seed=7)
    prize, adapter = env.prize, env.arena_text_adapter
    wrong = prize % 5 + 1
    for action, reward, says in [
        (SCOUT, 0.0, f"the prize is behind door #{prize}."),
        (prize, 1.0, f"You opened door {prize} and found the prize (score 1): it is behind door #{prize}."),
        (wrong, 0.0, f"The prize is not behind door {wrong}."),
    ]:
        env.reset(seed=7)
        env.step(action)
        assert env.rewards["player_0"] == reward and env.terminations["player_0"]
        assert says in adapter.episode_summary(_view(env))
        assert env.arena_outcome(env.rewards, "player_0") == ("win" if reward else "loss")
        details = adapter.episode_details(_view(env))
        assert details["scouted"] == (action == SCOUT) and details["score"] == reward
    env.reset(seed=7)
    env.step(wrong)
    assert str(prize) not in adapter.episode_summary(_view(env)).replace(f"door {wrong}", "")
    assert "#" not in adapter.episode_summary(_view(env))  # "#" marks the prize's door, and nothing else


def test_observation_and_rules_say_nothing_secret() -> None:
    env = DoorsEnv(doors=10)
    texts = set()
    for seed in range(30):
        env.reset(seed=seed)
        view = _view(env)
        adapter = env.arena_text_adapter
        texts.add((adapter.rules(view), adapter.observation(view), tuple(m.name for m in adapter.legal_moves(view))))
        assert env.observe("player_0")["observation"].tolist() == [10, 0]
    assert len(texts) == 1  # the same text whatever the prize


@pytest.mark.parametrize(
    ("answer", "action"), [("scout", 0), ("<action>open door 4</action>", 4), ("7", 7), ("door 9", 9)]
)
def test_answers_parse(answer: str, action: int) -> None:
    env = DoorsEnv(doors=10)
    env.reset(seed=0)
    moves = env.arena_text_adapter.legal_moves(_view(env))
    assert parse_action(answer, moves).action == action


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        DoorsEnv(doors=1)
    env = DoorsEnv(doors=3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action must be"):
        env.step(4)
