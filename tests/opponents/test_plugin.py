"""The plugin module: registration through the hook, spec parsing, and seeded repeatability of every opponent."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyspiel
import pytest

from arena.arenas.opponents import builtin_plugin
from arena.arenas.opponents.builtin_plugin import builtin_opponents, parse_opponent_spec
from arena.core.api.arena import Opponent
from arena.core.api.errors import ArenaError
from arena.core.host.registry import Registry

EXPECTED_ARENAS: dict[str, tuple[str, ...] | None] = {
    "random": None,
    "mcts": ("tic_tac_toe", "connect_four"),
    "cfr": ("kuhn_poker", "leduc_poker"),
    "cfr-argmax": ("kuhn_poker", "leduc_poker"),
    "conservative": ("kuhn_poker",),
    "aggressive": ("kuhn_poker",),
    "intermediate": ("kuhn_poker",),
    "bluffer": ("kuhn_poker",),
    "calling-station": ("kuhn_poker",),
    "folder": ("kuhn_poker",),
    **{f"ttt-{n}": ("tic_tac_toe",) for n in ("corners", "center", "edges", "row-major", "col-major", "anti-diagonal")},
    **{
        f"rps-{n}": ("rock_paper_scissors",)
        for n in ("rock", "paper", "scissors", "cycle", "copy", "beat-last", "frequency")
    },
    "text_maze-explorer": ("text_maze",),
}


def test_hook_registers_every_opponent_into_a_registry() -> None:
    registry: Registry[Any] = Registry("opponent")
    builtin_plugin.register_opponents(registry.registrar("builtin-opponents"))
    assert registry.names() == sorted(EXPECTED_ARENAS)
    for entry in registry:
        assert entry.meta["arenas"] == EXPECTED_ARENAS[entry.name]
        assert entry.meta["description"]
        assert entry.plugin == "builtin-opponents"


def test_hookimpl_marker() -> None:
    assert hasattr(builtin_plugin.register_opponents, "arena_impl")


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("mcts:1000", ("mcts", "1000")),
        ("cfr-argmax", ("cfr-argmax", None)),
        ("random", ("random", None)),
        (" cfr : 500 ", ("cfr", "500")),
        ("custom:a:b", ("custom", "a:b")),
    ],
)
def test_parse_opponent_spec(spec: str, expected: tuple[str, str | None]) -> None:
    assert parse_opponent_spec(spec) == expected


@pytest.mark.parametrize("spec", ["", ":5", "mcts:"])
def test_parse_opponent_spec_refuses_malformed(spec: str) -> None:
    with pytest.raises(ArenaError):
        parse_opponent_spec(spec)


def _spiel_actions(opponent: Opponent, game_name: str, spiel_view: Any, seed: int) -> list[int]:
    """The opponent plays every seat of three games; chance outcomes come from a fixed rng."""
    game = pyspiel.load_game(game_name)
    rng = np.random.default_rng(seed)
    actions = []
    for _ in range(3):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                outcomes, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(outcomes, p=probs)))
            else:
                action = opponent.act(spiel_view(state))
                assert action in state.legal_actions()
                actions.append(action)
                state.apply_action(action)
    return actions


def _rps_actions(opponent: Opponent, rps_view: Any, seed: int) -> list[int]:
    rng = np.random.default_rng(seed)
    own: list[int] = []
    other: list[int] = []
    for _ in range(10):
        own.append(opponent.act(rps_view(own, other)))
        other.append(int(rng.integers(3)))
    return own


ARGS = {"mcts": "30", "cfr": "20", "cfr-argmax": "20"}  # keep the repeatability check fast
CASES = [
    (name, arena)
    for name, _, arenas, _ in builtin_opponents()
    for arena in (arenas or ("tic_tac_toe", "kuhn_poker", "leduc_poker", "rock_paper_scissors"))
    if arena != "text_maze"  # not an OpenSpiel game: tests/arenas/test_text_maze.py checks the explorer
]


@pytest.mark.parametrize(("name", "arena"), CASES)
def test_same_seed_same_actions(spiel_view, rps_view, tmp_path, monkeypatch, name: str, arena: str) -> None:
    monkeypatch.setenv("ARENA_CACHE", str(tmp_path))
    factory = dict((n, f) for n, f, _, _ in builtin_opponents())[name]

    def run(seed: int) -> list[int]:
        opponent = factory(arena, ARGS.get(name), seed)
        if arena == "rock_paper_scissors":
            return _rps_actions(opponent, rps_view, 5)
        return _spiel_actions(opponent, arena, spiel_view, 5)

    assert run(11) == run(11)
