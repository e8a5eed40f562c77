"""Plugin manager: validation, per-run enabling and errors that name the plugin and hook."""

from __future__ import annotations

from typing import Any

import pytest

from arena.core import hookimpl
from arena.core.api.errors import PluginError, UnknownNameError
from arena.core.host.plugins import PluginSet, installed_plugins, spec_names


class Typo:
    @hookimpl
    def reflekt(self, trial: Any) -> None:
        return None


class BadArgs:
    @hookimpl
    def pre_action(self, turn: Any, weather: str) -> None:
        return None


class EstimatorA:
    @hookimpl
    def compute_advantages(self, samples: list[Any]) -> list[float]:
        return [1.0 for _ in samples]


class EstimatorB:
    @hookimpl
    def compute_advantages(self, samples: list[Any]) -> list[float]:
        return [2.0 for _ in samples]


class Broken:
    @hookimpl
    def trial_start(self, trial: Any) -> None:
        raise ValueError("boom")


def test_every_design_hook_has_a_documented_spec() -> None:
    required = {
        "pre_action", "reflect", "retrieve_memory", "normalize_advantages", "register_arenas", "register_opponents",
        "register_backends", "register_commands", "trial_start", "episode_start", "post_step", "episode_end",
        "trial_end", "store_memory", "compute_rewards", "augment_group", "compute_advantages", "training_view",
        "select_matchups", "match_end", "evolve_population",
    }  # fmt: skip
    assert required <= set(spec_names())
    from arena.core.api import hookspecs

    for name in spec_names():
        doc = getattr(hookspecs, name).__doc__ or ""
        assert "Results" in doc or "firstresult" in doc, name


def test_builtin_plugins_are_installed() -> None:
    names = {p.name: p for p in installed_plugins()}
    assert {"builtin-arenas", "builtin-opponents", "builtin-backends", "reflection"} <= set(names)
    assert names["reflection"].distribution == "arena-rl"
    assert "reflect" in names["reflection"].hooks


def test_unknown_plugin_names_alternatives() -> None:
    with pytest.raises(UnknownNameError, match=r"unknown plugin 'reflektion' \(did you mean 'reflection'\?\)"):
        PluginSet(["reflektion"])


def test_hook_without_spec_is_an_error_naming_plugin_and_hook() -> None:
    with pytest.raises(PluginError, match=r"plugin 'typo' implements hook 'reflekt'.*did you mean 'reflect'"):
        PluginSet(["typo"], extra={"typo": Typo()})


def test_unknown_argument_is_an_error_naming_plugin() -> None:
    with pytest.raises(PluginError, match=r"plugin 'bad'.*weather"):
        PluginSet(["bad"], extra={"bad": BadArgs()})


def test_competing_firstresult_plugins_are_an_error() -> None:
    with pytest.raises(PluginError, match=r"'a' and 'b' both implement 'compute_advantages'"):
        PluginSet(["a", "b"], extra={"a": EstimatorA(), "b": EstimatorB()})
    assert PluginSet(["a"], extra={"a": EstimatorA(), "b": EstimatorB()}).first("compute_advantages", samples=[0]) == [
        1.0
    ]


def test_installed_is_not_enabled() -> None:
    plugins = PluginSet([])
    assert plugins.call("reflect", trial=None, episode=None, agent="a", seat=0, reflections=()) == []


def test_failure_inside_a_hook_names_plugin_and_hook() -> None:
    plugins = PluginSet(["broken"], extra={"broken": Broken()})
    with pytest.raises(PluginError, match=r"plugin 'broken' failed in hook 'trial_start': ValueError: boom"):
        plugins.call("trial_start", trial=None)


def test_a_plugin_class_gets_one_instance_per_set_and_its_state_is_declared() -> None:
    from arena.core.api.state import StatefulPlugin

    class Counter:
        def __init__(self) -> None:
            self.seen = 0

        @hookimpl
        def trial_start(self, trial: Any) -> None:
            self.seen += 1

        def state_dict(self) -> dict[str, Any]:
            return {"seen": self.seen}

        def load_state_dict(self, state: Any) -> None:
            self.seen = int(state["seen"])

    alice, bob = PluginSet(["count"], extra={"count": Counter}), PluginSet(["count"], extra={"count": Counter})
    assert alice.plugin("count") is not bob.plugin("count")
    assert isinstance(alice.plugin("count"), StatefulPlugin)
    alice.call("trial_start", trial=None)
    alice.call("trial_start", trial=None)
    assert alice.state_dict() == {"count": {"seen": 2}} and bob.state_dict() == {"count": {"seen": 0}}
    bob.load_state_dict(alice.state_dict())
    assert bob.plugin("count").seen == 2
    stateless = PluginSet(["say"], extra={"say": type("S", (), {})()})
    with pytest.raises(PluginError, match="saved state but no load_state_dict"):
        stateless.load_state_dict({"say": {}})


def test_a_broken_factory_names_its_plugin() -> None:
    from arena.core.host.registry import Registry

    registry: Registry[Any] = Registry("arena")
    registry.registrar("third-party")("guess", lambda **kw: 1 / 0)
    with pytest.raises(PluginError) as info:
        registry.get("guess").create("arena")
    assert (
        str(info.value) == "arena 'guess' (plugin 'third-party') failed to build: ZeroDivisionError: division by zero"
    )
