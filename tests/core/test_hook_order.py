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


# --------------------------------------------------------------------------------------------------------------
# pluggy's own semantics: a third-party wrapper, tryfirst and trylast behave as pluggy documents
# --------------------------------------------------------------------------------------------------------------


class Planner:
    @hookimpl
    def pre_action(self, turn: Any) -> ActionPlan:
        return ActionPlan(instructions="Plan from the planner.", source="planner")


class Wrapper:
    """A new-style wrapper (``wrapper=True``) around ``pre_action``: it sees the inner results and changes them."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []

    @hookimpl(wrapper=True)
    def pre_action(self, turn: Any) -> Any:
        plans = yield
        self.seen.append([plan.instructions for plan in plans])
        return [*plans, ActionPlan(instructions="Wrapped by the wrapper.", source="wrapper")]


def test_a_third_party_wrapper_wraps_a_real_hook_call() -> None:
    wrapper = Wrapper()
    (trial,), _, _ = play(
        specs(1, arena="tic_tac_toe", seats=("model:scripted", "ttt-row-major")),
        plugins=["wrap", "planner"],
        extra={"wrap": wrapper, "planner": Planner()},
    )
    llm_steps = [s for s in trial.episodes[0].steps if s.completion is not None]
    assert wrapper.seen == [["Plan from the planner."]] * len(llm_steps)
    prompt = llm_steps[0].prompt[-1].content
    assert "Plan from the planner." in prompt and "Wrapped by the wrapper." in prompt


class Say:
    def __init__(self, word: str) -> None:
        self.word = word

    @hookimpl
    def retrieve_memory(self, turn: Any) -> list[MemoryItem]:
        return [MemoryItem(text=self.word, section="words")]


class SayFirst(Say):
    @hookimpl(tryfirst=True)
    def retrieve_memory(self, turn: Any) -> list[MemoryItem]:
        return [MemoryItem(text=self.word, section="words")]


class SayLast(Say):
    @hookimpl(trylast=True)
    def retrieve_memory(self, turn: Any) -> list[MemoryItem]:
        return [MemoryItem(text=self.word, section="words")]


def words(results: list[list[MemoryItem]]) -> list[list[str]]:
    return [[item.text for item in items] for items in results]


def test_config_order_then_tryfirst_and_trylast() -> None:
    from arena.core import PluginSet

    plain = PluginSet(["a", "b", "c"], extra={"a": Say("a"), "b": Say("b"), "c": Say("c")})
    assert words(plain.call("retrieve_memory", turn=None)) == [["a"], ["b"], ["c"]]
    moved = PluginSet(["a", "b", "c"], extra={"a": SayLast("a"), "b": Say("b"), "c": SayFirst("c")})
    assert words(moved.call("retrieve_memory", turn=None)) == [["c"], ["b"], ["a"]]


def test_a_failing_hook_names_its_plugin_even_under_a_wrapper() -> None:
    from arena.core import PluginError, PluginSet

    class Broken:
        @hookimpl
        def pre_action(self, turn: Any) -> ActionPlan:
            raise ZeroDivisionError("boom")

    plugins = PluginSet(["wrap", "broken"], extra={"wrap": Wrapper(), "broken": Broken()})
    try:
        plugins.call("pre_action", turn=None)
    except PluginError as exc:
        assert str(exc) == "plugin 'broken' failed in hook 'pre_action': ZeroDivisionError: boom"
    else:
        raise AssertionError("no PluginError")


def test_a_hook_returning_the_wrong_type_is_named_where_it_happens() -> None:
    from arena.core import PluginError, PluginSet

    class Confused:
        @hookimpl
        def pre_action(self, turn: Any) -> str:
            return "play rock"

        @hookimpl
        def retrieve_memory(self, turn: Any) -> Any:
            return MemoryItem(section="Notes", text="a single item, not a list")

    plugins = PluginSet(["confused"], extra={"confused": Confused()})
    try:
        plugins.call("pre_action", turn=None)
    except PluginError as exc:
        assert str(exc) == "plugin 'confused' returned a str where ActionPlan is expected from hook 'pre_action'"
    else:
        raise AssertionError("no PluginError")
    try:
        plugins.call("retrieve_memory", turn=None)
    except PluginError as exc:
        assert "plugin 'confused' returned a MemoryItem where list is expected from hook 'retrieve_memory'" in str(exc)
    else:
        raise AssertionError("no PluginError")


def test_a_function_named_like_a_hook_without_the_marker_is_reported() -> None:
    from arena.core.host.plugins import unmarked_hooks

    class Forgetful:
        def pre_action(self, turn: Any) -> None:  # no @hookimpl: pluggy never calls it
            return None

        @hookimpl
        def trial_start(self, trial: Any) -> None:
            return None

    assert unmarked_hooks(Forgetful()) == ["pre_action"]
