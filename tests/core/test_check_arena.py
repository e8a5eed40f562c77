"""``arena check-arena``: a clean arena passes, and a leaky one with clashing names is caught."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core.api.arena import Move, SeatView
from arena.core.cli.main import main
from arena.core.host import catalog
from arena.core.rollout.check import check_arena


class HideEnv(AECEnv[str, np.ndarray, int]):
    """player_0 hides 0, 1 or 2; player_1 guesses it. The adapter below has both traps of issue 29."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "hide_v0", "is_parallelizable": False}

    def __init__(self) -> None:
        self.possible_agents = ["player_0", "player_1"]
        self.agents: list[str] = []
        self.hidden = 0
        self.render_mode = None
        self.arena_text_adapter = LeakyAdapter()
        self._obs = spaces.Dict(
            {"observation": spaces.Box(0, 1, (1,), np.int8), "action_mask": spaces.Box(0, 1, (3,), np.int8)}
        )
        self._act = spaces.Discrete(3)

    def observation_space(self, agent: str) -> spaces.Dict:
        return self._obs

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        return {"observation": np.zeros(1, np.int8), "action_mask": np.ones(3, np.int8)}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.agents = list(self.possible_agents)
        self.agent_selection = "player_0"
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in self.agents}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        if agent == "player_0":
            self.hidden = int(action)
            self.agent_selection = "player_1"
        else:
            won = int(action) == self.hidden
            self.rewards = {"player_0": -1.0 if won else 1.0, "player_1": 1.0 if won else -1.0}
            self.terminations = dict.fromkeys(self.agents, True)
        self._accumulate_rewards()


class LeakyAdapter:
    def rules(self, view: SeatView) -> str:
        return "player_0 hides a number from 0 to 2; player_1 guesses it."

    def observation(self, view: SeatView) -> str:
        return "Hide a number." if view.agent == "player_0" else "Guess the number."

    def legal_moves(self, view: SeatView) -> list[Move]:
        if view.agent == "player_0":
            return [Move(a, f"hide {a}") for a in range(3)]
        # Trap 1: guesses named by digits that are other moves' action ids.
        return [Move(0, "2"), Move(1, "0"), Move(2, "1")]

    def action_name(self, view: SeatView, action: int) -> str:
        # Trap 2: the hider's view names the hidden number, and the engine shows that name to the guesser.
        if view.agent == "player_0" and view.env.agent_selection == "player_0":
            return f"hide {action}"
        return "hide" if view.env.agent_selection == "player_0" else f"guess {action}"

    def episode_summary(self, view: SeatView) -> str:
        return f"The number was {view.env.hidden}."


@pytest.fixture
def hide_arena() -> Any:
    catalog.arenas().add("hide", HideEnv, plugin="tests")
    yield "hide"
    catalog.reset()


def test_a_clean_arena_passes() -> None:
    findings = check_arena("kuhn_poker", episodes=2)
    assert [f.check for f in findings] == [
        "pettingzoo api_test",
        "first prompts",
        "move names parse back",
        "names that shadow action ids",
        "action_name leaks",
    ]
    assert all(f.ok for f in findings)
    prompts = findings[1].details
    assert len(prompts) == 2 and "Legal moves:" in prompts[0]


def test_the_traps_are_flagged(hide_arena: str) -> None:
    by_check = {f.check: f for f in check_arena(hide_arena, episodes=3)}
    assert by_check["pettingzoo api_test"].ok
    clash = by_check["names that shadow action ids"]
    assert not clash.ok and "move '2' (action 0) is named like action 2 ('1')" in clash.details
    leak = by_check["action_name leaks"]
    assert not leak.ok and any("shown to player_1 as 'hide" in d for d in leak.details)


def test_the_command_exits_non_zero_when_something_needs_a_look(hide_arena: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["check-arena", hide_arena, "--episodes", "2"])
    assert exc.value.code == 1


class PublicNameAdapter(LeakyAdapter):
    """Private legal-move names ("hide 2") but a public ``action_name`` ("hide") from every view."""

    def legal_moves(self, view: SeatView) -> list[Move]:
        if view.agent == "player_0":
            return [Move(a, f"hide {a}") for a in range(3)]
        return [Move(a, f"guess {a}") for a in range(3)]

    def action_name(self, view: SeatView, action: int) -> str:
        return "hide" if view.env.agent_selection == "player_0" else f"guess {action}"


class PublicNameHideEnv(HideEnv):
    def __init__(self) -> None:
        super().__init__()
        self.arena_text_adapter = PublicNameAdapter()


def test_an_llm_seats_private_move_name_is_not_shown_to_the_other_seat() -> None:
    from arena.plugins.mage import episode_transcript as mage_transcript
    from arena.plugins.reflection import episode_transcript as reflection_transcript

    from .helpers import play, specs

    catalog.arenas().add("hide-public", PublicNameHideEnv, plugin="tests")
    try:
        trials, _, _ = play(specs(4, arena="hide-public", seats=("model:scripted", "model:scripted"), episodes=2))
    finally:
        catalog.reset()
    for trial in trials:
        for episode in trial.episodes:
            hide, guess = episode.steps
            assert hide.move.startswith("hide ") and hide.move_seen_by("player_0") == hide.move
            assert hide.public_move == "hide" and hide.move_seen_by("player_1") == "hide"
            guesser_prompt = guess.prompt[-1].content
            assert "- Step 1, player_0: hide\n" in guesser_prompt + "\n"
            assert hide.move not in guesser_prompt
            assert "player_0: hide\n" in mage_transcript(episode, "player_1") + "\n"
            assert "player_0: hide\n" in reflection_transcript(episode, "player_1") + "\n"
            assert hide.move in mage_transcript(episode, "player_0")
