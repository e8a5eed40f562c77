"""TextArena's games as arenas (arenas/textarena_env.py): the registry scan, PettingZoo's api_test, the parse of
bracketed moves, invalid moves on both sides (ours and TextArena's), and trials played through the engine."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena.arenas.textarena_env import (
    TextArenaAdapter,
    TextArenaEnv,
    available_moves,
    find_action,
    textarena_games,
)
from arena.core.api.arena import SeatView
from arena.core.api.backend import GenerationRequest
from arena.core.api.errors import ArenaError
from arena.core.config.trial import InvalidActionConfig, TrialConfig
from arena.core.host import catalog

from ..core.helpers import play, specs

pytest.importorskip("textarena")

GAMES = {g.env_id: g for g in textarena_games()}


def make(env_id: str, **kwargs: Any) -> TextArenaEnv:
    env = catalog.make_arena(f"textarena:{env_id}", **kwargs)
    assert isinstance(env, TextArenaEnv)
    return env


def view_of(env: TextArenaEnv) -> SeatView:
    agent = env.agent_selection
    return SeatView(env, agent, env.possible_agents.index(agent), env.observe(agent), None, {})


def test_registry_scan_finds_the_games_with_their_player_counts() -> None:
    assert len(GAMES) > 200
    assert (GAMES["TicTacToe-v0"].min_players, GAMES["TicTacToe-v0"].max_players) == (2, 2)
    assert GAMES["KuhnPoker-v0"].min_players == 2
    assert GAMES["ThreePlayerTicTacToe-v0"].min_players == 3
    assert GAMES["PublicGoodsGame-v0"].min_players == 3  # fixed by its num_players=3
    assert GAMES["Sudoku-v0"].min_players == 1
    assert not any(gid.endswith(("-raw", "-train")) for gid in GAMES)
    arena_ids = set(catalog.arenas().names())
    assert {"textarena:TicTacToe-v0", "textarena:KuhnPoker-v0", "textarena:SimpleNegotiation-v0"} <= arena_ids


@pytest.mark.parametrize("env_id", ["TicTacToe-v0", "KuhnPoker-v0", "SimpleNegotiation-v0"])
def test_pettingzoo_api_test(env_id: str) -> None:
    api_test(make(env_id), num_cycles=30)


def test_wrong_player_count_is_one_line() -> None:
    with pytest.raises(ArenaError, match=r"'textarena:TicTacToe-v0' is played by 2 players, not players=3"):
        make("TicTacToe-v0", players=3)


def test_find_action_and_the_games_listing() -> None:
    assert find_action("I take the centre. <action>4</action>") == "[4]"
    assert find_action("<action>[bet]</action>") == "[bet]"
    assert find_action("first [0] then, better, [8]") == "[8]"
    assert find_action("no move here") is None
    assert find_action("<action></action>") is None
    board = "Available Moves: '[0]', '[1]'\nPlayer 1 moved.\nAvailable Moves: '[1]', '[5]'"
    assert available_moves(board) == ["[1]", "[5]"]
    assert available_moves("Your available actions are: '[check]', '[bet]'") == ["[check]", "[bet]"]
    assert available_moves("no listing") == []


def test_parse_answer_checks_the_listed_moves() -> None:
    env = make("TicTacToe-v0")
    env.reset(seed=0)
    adapter = TextArenaAdapter()
    view = view_of(env)
    assert adapter.parse_answer(view, "<action>4</action>").action == "[4]"
    rejected = adapter.parse_answer(view, "<action>[9]</action>")
    assert rejected.action is None and rejected.error is not None and "not an available move" in rejected.error
    assert adapter.parse_answer(view, "hmm").error == "no [move] in the answer"
    assert adapter.parse_answer(view, "I put my mark in cell 6.").action == "[6]"  # a listed move's bare words
    assert adapter.parse_answer(view, "[7]").action == "[7]"
    env.step("[4]")
    taken = adapter.parse_answer(view_of(env), "[4]")
    assert taken.action is None  # cell 4 is no longer listed for the second player


def test_the_game_text_reaches_the_prompt_pieces() -> None:
    env = make("KuhnPoker-v0")
    env.reset(seed=3)
    adapter = TextArenaAdapter()
    view = view_of(env)
    assert "Kuhn Poker" in adapter.rules(view)
    observation = adapter.observation(view)
    assert "Your card is" in observation and "[GAME]" in observation
    assert "Kuhn Poker uses a 3-card deck" not in observation  # the rules are not repeated as observation
    assert adapter.parse_answer(view, "With a card like mine I bet.").action == "[bet]"
    assert adapter.parse_answer(view, "<action>CHECK</action>").action == "[check]"


def test_a_move_the_game_rejects_gets_textarenas_own_retry_then_loses() -> None:
    env = make("KuhnPoker-v0", error_allowance=1)
    env.reset(seed=0)
    first = env.agent_selection
    env.step("[call]")  # nothing to call yet: TextArena rejects it and lets the player resubmit once
    assert env.agent_selection == first and not any(env.terminations.values())
    assert "attempted an invalid move" in TextArenaAdapter().observation(view_of(env))
    env.step("[call]")  # again: over the allowance, the player loses the game
    assert all(env.terminations.values())
    loser = env.possible_agents.index(first)
    assert env.final_rewards[first] == -1.0 and env.final_rewards[env.possible_agents[1 - loser]] == 1.0


def first_listed_move(request: GenerationRequest, rng: np.random.Generator) -> str:
    if request.purpose != "action":
        return "<remark>Take the lowest free cell.</remark>"
    moves = re.findall(r"\[\d\]", request.messages[-1].content.split("Available Moves:")[-1])
    return f"<action>{moves[0]}</action>" if moves else "?"


def test_a_three_episode_trial_against_textarena_random() -> None:
    trial_specs = specs(2, arena="textarena:TicTacToe-v0", seats=("model:scripted", "textarena-random"), episodes=3)
    trials, _, _ = play(trial_specs, plugins=["mage"], responder=first_listed_move)
    for trial in trials:
        assert len(trial.episodes) == 3
        for episode in trial.episodes:
            assert episode.forfeited_by is None
            assert episode.invalid_actions == {"player_0": 0, "player_1": 0}
            assert sorted(episode.returns.values()) in ([-1.0, 1.0], [0.0, 0.0])
            llm_moves = [s.action for s in episode.steps if s.agent == "player_0"]
            assert llm_moves and all(re.fullmatch(r"\[\d\]", m) for m in llm_moves)
            assert "The game is over." in episode.summaries["player_0"]
        # MAGE's memory: the second episode's prompt holds the first episode's transcript.
        later_prompt = trial.episodes[1].steps[0].prompt[-1].content
        assert "episode 2 of 3" in later_prompt


def test_an_answer_without_a_move_follows_the_engine_policy() -> None:
    def no_move(request: GenerationRequest, rng: np.random.Generator) -> str:
        return "I am not sure."

    seats = ("model:scripted", "textarena-random")
    forfeit = TrialConfig(invalid_action=InvalidActionConfig(policy="forfeit"))
    (trial,), _, _ = play(specs(1, arena="textarena:TicTacToe-v0", seats=seats), config=forfeit, responder=no_move)
    assert trial.final.forfeited_by == "player_0"
    answers = iter(["I am not sure.", "<action>[4]</action>"] + ["<action>[0]</action>"] * 20)

    def retry_then_move(request: GenerationRequest, rng: np.random.Generator) -> str:
        return next(answers)

    retry = TrialConfig(invalid_action=InvalidActionConfig(policy="retry", retries=1))
    (trial,), _, _ = play(
        specs(1, arena="textarena:TicTacToe-v0", seats=seats), config=retry, responder=retry_then_move
    )
    first = trial.final.steps[0]
    assert first.attempts == 2 and first.action == "[4]"
    assert "could not be used (no [move] in the answer)" in first.prompt[-1].content


def test_textarena_random_refuses_other_arenas() -> None:
    from arena.arenas.textarena_plugin import textarena_random

    with pytest.raises(ArenaError, match="plays TextArena arenas"):
        textarena_random("kuhn_poker", None, 0)
