"""What the built-in and generic text adapters tell a model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.arenas.builtin_plugin import OPENSPIEL_GAMES
from arena.arenas.openspiel_arenas import RANK_NAMES, LeducPokerAdapter
from arena.core.api.arena import SeatView, TextAdapter
from arena.core.api.errors import ArenaError
from arena.core.rollout.text_adapter import GenericTextAdapter, adapter_for, parse_action

ViewOf = Callable[[Any], SeatView]


@pytest.mark.parametrize("arena_id", [*OPENSPIEL_GAMES, "rock_paper_scissors"])
def test_builtin_adapters_fit_the_protocol(factories: dict[str, Any], arena_id: str) -> None:
    adapter = adapter_for(factories[arena_id]())
    assert isinstance(adapter, TextAdapter) and not isinstance(adapter, GenericTextAdapter)


@pytest.mark.parametrize("arena_id", OPENSPIEL_GAMES)
def test_legal_moves_match_the_mask_and_parse_back(factories: dict[str, Any], view_of: ViewOf, arena_id: str) -> None:
    env = factories[arena_id]()
    adapter = adapter_for(env)
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    for _ in env.agent_iter(100):
        _, _, term, trunc, _ = env.last()
        view = view_of(env)
        if term or trunc:
            assert (
                "won" in adapter.episode_summary(view)
                or "lost" in adapter.episode_summary(view)
                or "draw" in (adapter.episode_summary(view))
            )
            env.step(None)
            continue
        moves = adapter.legal_moves(view)
        assert [m.action for m in moves] == view.legal_actions()
        assert view.agent.replace("player_", "Player ") in adapter.rules(view)
        assert adapter.observation(view)
        move = moves[int(rng.integers(len(moves)))]
        assert parse_action(f"<action>{move.name}</action>", moves).action == move.action
        assert adapter.action_name(view, move.action) == move.name
        env.step(move.action)


def test_kuhn_observation_names_the_card(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["kuhn_poker"]()
    env.reset(seed=11)
    adapter = adapter_for(env)
    view = view_of(env)
    card = env.unwrapped.game_state.history()[view.seat]
    text = adapter.observation(view)
    assert f"Your card: {RANK_NAMES[card]}." in text
    assert "Betting so far: (none yet)." in text
    assert "You are Player 0 (first to act)." in adapter.rules(view)
    assert [(m.name, m.aliases) for m in adapter.legal_moves(view)] == [("Pass", ("check",)), ("Bet", ("raise",))]
    play(env, [1])  # Player 0 bets
    view = view_of(env)
    assert "Player 0 bet" in adapter.observation(view) and "You face a bet" in adapter.observation(view)
    assert [(m.name, m.aliases) for m in adapter.legal_moves(view)] == [("Pass", ("fold",)), ("Bet", ("call",))]
    assert parse_action("fold", adapter.legal_moves(view)).action == 0


def test_kuhn_showdown_summary_names_both_cards(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["kuhn_poker"]()
    env.reset(seed=4)
    cards = env.unwrapped.game_state.history()[:2]
    play(env, [0, 1, 1])  # pass, bet, call: showdown
    summary = adapter_for(env).episode_summary(view_of(env))
    assert f"Player 0 had {RANK_NAMES[cards[0]]}" in summary and f"Player 1 had {RANK_NAMES[cards[1]]}" in summary
    assert "Player 0 passed, Player 1 bet, Player 0 bet (called)" in summary
    assert ("You won" in summary) != ("You lost" in summary)


def test_kuhn_fold_reveals_nothing(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["kuhn_poker"]()
    env.reset(seed=4)
    play(env, [1, 0])  # bet, fold
    summary = adapter_for(env).episode_summary(view_of(env))
    assert "No showdown" in summary and "had" not in summary
    assert "Player 1 passed (folded)" in summary


def test_ttt_legal_moves_are_the_empty_cells(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["tic_tac_toe"]()
    env.reset(seed=0)
    play(env, [4, 0, 8])
    adapter = adapter_for(env)
    view = view_of(env)
    assert view.agent == "player_1"
    board = [row for row in str(env.unwrapped.game_state).splitlines() if row]
    empty = [f"({r},{c})" for r in range(3) for c in range(3) if board[r][c] == "."]
    moves = adapter.legal_moves(view)
    assert [m.name for m in moves] == empty
    assert moves[0].aliases[:2] == ("o(0,1)", "1")
    text = adapter.observation(view)
    assert "you are 'o'" in text and "0   o . ." in text and "1   . x ." in text
    assert parse_action("(1,1)", moves, adapter.all_moves(view)).error == "illegal move '(1,1)'"


def test_connect_four_names_columns(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["connect_four"]()
    env.reset(seed=0)
    play(env, [3])
    adapter = adapter_for(env)
    view = view_of(env)
    assert [m.name for m in adapter.legal_moves(view)][:2] == ["column 0", "column 1"]
    lines = adapter.observation(view).splitlines()
    assert lines[-2].strip() == "0 1 2 3 4 5 6"
    assert lines[-3].strip() == ". . . x . . ."


def test_leduc_text(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["leduc_poker"]()
    env.reset(seed=2)
    adapter = adapter_for(env)
    private = env.unwrapped.game_state.history()[:2]
    view = view_of(env)
    assert f"Your private card: {LeducPokerAdapter.card_name(private[0])}." in adapter.observation(view)
    assert [m.name for m in adapter.legal_moves(view)] == ["Call", "Raise"]  # nothing to fold against
    assert parse_action("check", adapter.legal_moves(view)).action == 1
    play(env, [2, 1])  # raise, call: the public card is dealt
    public = env.unwrapped.game_state.history()[4]
    view = view_of(env)
    text = adapter.observation(view)
    assert f"Public card: {LeducPokerAdapter.card_name(public)}." in text
    assert "Round 1 betting: Player 0 raised, Player 1 called." in text and "Round 2 of 2." in text
    assert "Pot: 6 chips." in text
    play(env, [1, 1])  # check, check: showdown
    summary = adapter.episode_summary(view_of(env))
    assert all(f"had {LeducPokerAdapter.card_name(c)}" in summary for c in private)


def test_liars_dice_text(factories: dict[str, Any], view_of: ViewOf, play: Any) -> None:
    env = factories["liars_dice"]()
    env.reset(seed=1)
    dice = [a + 1 for a in env.unwrapped.game_state.history()[:2]]
    adapter = adapter_for(env)
    view = view_of(env)
    assert f"Your dice: {dice[0]}." in adapter.observation(view)
    moves = adapter.legal_moves(view)
    assert moves[7].name == "bid 2 × 2" and "2-2" in moves[7].aliases
    play(env, [7])
    view = view_of(env)
    assert "Player 0 bid 2 × 2" in adapter.observation(view)
    assert adapter.legal_moves(view)[-1].name == "liar"
    play(env, [12])
    summary = adapter.episode_summary(view_of(env))
    assert f"Player 0 had {dice[0]}; Player 1 had {dice[1]}" in summary and "Player 1 called liar" in summary


def test_rps_text(factories: dict[str, Any]) -> None:
    env = factories["rock_paper_scissors"](rounds=3)
    env.reset(seed=0)
    obs, *_ = env.step({"player_0": 0, "player_1": 1})
    adapter = adapter_for(env)
    view = SeatView(env=env, agent="player_1", seat=1, observation=obs["player_1"], action_mask=None)
    text = adapter.observation(view)
    assert "Round 1: you played paper, opponent played rock (you won)." in text and "score so far: +1" in text
    assert "Round 2 of 3." in text and "over 3 rounds" in adapter.rules(view)
    assert parse_action("s", adapter.legal_moves(view)).action == 2
    assert adapter.action_name(view, 1) == "paper"
    assert adapter.episode_summary(view).startswith("You won with a score of +1")


class TinyEnv(AECEnv):
    """Two agents, one move each; the observation is a dict carrying the action mask."""

    metadata = {"name": "tiny_v0", "render_modes": []}  # noqa: RUF012

    def __init__(self) -> None:
        self.possible_agents = ["a", "b"]
        self._obs_space = spaces.Dict(
            {"observation": spaces.Box(0, 1, (3,), np.float32), "action_mask": spaces.MultiBinary(4)}
        )
        self._act_space: spaces.Space = spaces.Discrete(4)

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._act_space

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.agents = self.possible_agents[:]
        self.agent_selection = "a"
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {"a": 0.5, "b": -0.5}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos: dict[str, dict] = {a: {} for a in self.agents}

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return {"observation": np.array([0.25, 0.0, 1.0], np.float32), "action_mask": np.array([0, 1, 0, 1], np.int8)}

    def step(self, action: int) -> None:
        self.agent_selection = "b"


def test_generic_adapter_on_a_dict_observation_env() -> None:
    env = TinyEnv()
    env.reset()
    adapter = adapter_for(env)
    assert isinstance(adapter, GenericTextAdapter)
    obs = env.observe("a")
    view = SeatView(env=env, agent="a", seat=0, observation=obs, action_mask=None)  # mask only in the observation
    moves = adapter.legal_moves(view)
    assert [(m.action, m.name, m.aliases) for m in moves] == [(1, "1", ("action 1",)), (3, "3", ("action 3",))]
    text = adapter.observation(view)
    assert text == "observation: [0.25 0.   1.  ]" and "action_mask" not in text
    rules = adapter.rules(view)
    assert "generic environment" in rules and "tiny_v0" in rules and "a (seat 0)" in rules and "move number" in rules
    assert parse_action("I choose 3", moves).action == 3
    assert parse_action("action 1", moves).action == 1
    assert parse_action("2", moves).error == "illegal action 2"
    assert adapter.action_name(view, 3) == "action 3"
    assert "final cumulative reward: -0.5" in adapter.episode_summary(
        SeatView(env=env, agent="b", seat=1, observation=obs, action_mask=None)
    )


def test_generic_adapter_uses_info_mask_then_everything() -> None:
    env = TinyEnv()
    env.reset()
    adapter = GenericTextAdapter()
    view = SeatView(
        env=env, agent="a", seat=0, observation=np.arange(3), action_mask=None, info={"action_mask": [1, 1, 0, 0]}
    )
    assert [m.action for m in adapter.legal_moves(view)] == [0, 1]
    view = SeatView(env=env, agent="a", seat=0, observation="plain text", action_mask=None)
    assert [m.action for m in adapter.legal_moves(view)] == [0, 1, 2, 3]
    assert adapter.observation(view) == "plain text"


def test_adapter_for_rejects_non_discrete_envs() -> None:
    env = TinyEnv()
    env._act_space = spaces.Box(-1, 1, (2,))
    with pytest.raises(ArenaError, match="not Discrete"):
        adapter_for(env)
