"""The documented hook order of a trial, pinned down by a recording plugin."""

from __future__ import annotations

from typing import Any

from arena.core import hookimpl
from arena.core.api.backend import ChatMessage
from arena.core.api.records import ActionPlan, MemoryItem, ReflectionRequest

from .helpers import play, specs


class Recorder:
    def __init__(self) -> None:
        self.calls: list[str] = []

    @hookimpl
    def trial_start(self, trial: Any) -> None:
        self.calls.append("trial_start")

    @hookimpl
    def episode_start(self, episode: int) -> None:
        self.calls.append(f"episode_start:{episode}")

    @hookimpl
    def retrieve_memory(self, turn: Any) -> list[MemoryItem]:
        self.calls.append("retrieve_memory")
        return []

    @hookimpl
    def pre_action(self, turn: Any) -> ActionPlan:
        self.calls.append("pre_action")
        return ActionPlan(instructions="Recorder was here.")

    @hookimpl
    def post_step(self, step: Any) -> None:
        self.calls.append("post_step:llm" if step.completion is not None else "post_step:other")

    @hookimpl
    def episode_end(self, episode: Any) -> None:
        self.calls.append("episode_end")

    @hookimpl
    def reflect(self, episode: Any, agent: str, last: bool) -> ReflectionRequest | None:
        self.calls.append("reflect:last" if last else "reflect")
        if last:
            return None
        return ReflectionRequest(name="rec", messages=(ChatMessage("user", "reflect"),), extract_tag="remark")

    @hookimpl
    def store_memory(self, reflection: Any) -> None:
        self.calls.append("store_memory")

    @hookimpl
    def trial_end(self, trial: Any) -> None:
        self.calls.append("trial_end")


def test_hook_order_over_a_two_episode_trial() -> None:
    recorder = Recorder()
    # tic-tac-toe with the LLM first and a deterministic opponent: the move order is known.
    (trial,), _, _ = play(
        specs(1, arena="tic_tac_toe", seats=("model:scripted", "ttt-row-major"), episodes=2),
        plugins=["rec"],
        extra={"rec": recorder},
    )
    expected: list[str] = ["trial_start"]
    for episode in trial.episodes:
        expected.append(f"episode_start:{episode.index}")
        for step in episode.steps:
            if step.completion is not None:
                expected += ["retrieve_memory", "pre_action", "post_step:llm"]
            else:
                expected.append("post_step:other")
        expected.append("episode_end")
        if episode.index == 0:
            expected += ["reflect", "store_memory"]
        else:
            expected.append("reflect:last")  # asked after the final episode too; this plugin declines
    expected.append("trial_end")
    assert recorder.calls == expected
    assert len(trial.episodes) == 2
    assert [r.name for r in trial.reflections] == ["rec"]
    # The pre_action instructions reach the prompt.
    llm_step = next(s for s in trial.episodes[0].steps if s.completion is not None)
    assert "Recorder was here." in llm_step.prompt[-1].content
