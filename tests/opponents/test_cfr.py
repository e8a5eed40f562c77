"""CFR+ opponents: equilibrium quality, the Kuhn game value by self-play, argmax, and the on-disk cache."""

from __future__ import annotations

import json
import time

import numpy as np
import pyspiel
import pytest

from arena.arenas.opponents import cfr
from arena.arenas.opponents.builtin_plugin import builtin_opponents
from arena.core.api.errors import ArenaError

FACTORIES = {name: factory for name, factory, _, _ in builtin_opponents()}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets an empty cache directory (the in-process cache is keyed by directory)."""
    monkeypatch.setenv("ARENA_CACHE", str(tmp_path))
    return tmp_path


def test_kuhn_policy_is_near_equilibrium() -> None:
    policy = cfr.cfr_policy("kuhn_poker", cfr.DEFAULT_ITERATIONS["kuhn_poker"])
    assert len(policy) == 12
    for pairs in policy.values():
        assert [a for a, _ in pairs] == [0, 1]
        assert sum(p for _, p in pairs) == pytest.approx(1.0)
    assert pyspiel.exploitability(pyspiel.load_game("kuhn_poker"), dict(policy)) < 1e-3


def test_cfr_self_play_reaches_game_value(spiel_view) -> None:
    """20000 games of cfr vs cfr on raw pyspiel states: seat 0 averages the Kuhn value −1/18."""
    seats = [FACTORIES["cfr"]("kuhn_poker", None, seed) for seed in (1, 2)]
    game = pyspiel.load_game("kuhn_poker")
    rng = np.random.default_rng(1234)
    total = 0.0
    n_games = 20_000
    for _ in range(n_games):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                player = state.current_player()
                state.apply_action(seats[player].act(spiel_view(state)))
        total += state.returns()[0]
    assert total / n_games == pytest.approx(-1 / 18, abs=0.02)


def test_cfr_argmax_takes_the_most_likely_action(spiel_view) -> None:
    opponent = FACTORIES["cfr-argmax"]("kuhn_poker", None, 0)
    game = pyspiel.load_game("kuhn_poker")
    checked = 0
    for cards in [(0, 1), (1, 2), (2, 0)]:
        for betting in [(), (0,), (1,), (0, 1)]:
            state = game.new_initial_state()
            for action in (*cards, *betting):
                state.apply_action(action)
            view = spiel_view(state)
            pairs = opponent.probabilities(view)
            best = max(p for _, p in pairs)
            expected = min(a for a, p in pairs if p >= best - 1e-12)
            assert [opponent.act(view) for _ in range(5)] == [expected] * 5
            checked += 1
    assert checked == 12


def test_argmax_breaks_ties_towards_the_lowest_action(spiel_view) -> None:
    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    state.apply_action(0)
    state.apply_action(1)
    uniform = {state.information_state_string(0): ((0, 0.5), (1, 0.5))}
    opponent = cfr.CfrOpponent("cfr-argmax", uniform, seed=0, argmax=True)
    assert opponent.act(spiel_view(state)) == 0


def test_cache_file_is_written_and_reused(isolated_cache, monkeypatch, spiel_view) -> None:
    path = cfr.cache_path("kuhn_poker", 77)
    assert path == isolated_cache / "cfr" / "kuhn_poker_cfrplus_77.json"
    opponent = FACTORIES["cfr"]("kuhn_poker", "77", 0)
    assert not path.exists()  # solved lazily, for the game the first view shows
    state = pyspiel.load_game("kuhn_poker").new_initial_state()
    state.apply_action(0)
    state.apply_action(1)
    opponent.act(spiel_view(state))
    data = json.loads(path.read_text())
    assert (data["game"], data["solver"], data["iterations"]) == ("kuhn_poker", "cfrplus", 77)
    assert len(data["policy"]) == 12
    assert not [p for p in path.parent.iterdir() if p.suffix == ".tmp"]

    # A fresh process (in-process cache cleared) must read the file, not solve again.
    cfr._cached_policy.cache_clear()

    def no_solving(*args, **kwargs):
        raise AssertionError("recomputed despite the cache file")

    monkeypatch.setattr(cfr, "compute_cfr_policy", no_solving)
    mtime = path.stat().st_mtime_ns
    policy = cfr.cfr_policy("kuhn_poker", 77)
    assert set(policy) == set(data["policy"])
    assert path.stat().st_mtime_ns == mtime
    # ... and the in-process cache hands back the very same table.
    assert cfr.cfr_policy("kuhn_poker", 77) is policy


def test_corrupt_cache_is_recomputed(isolated_cache) -> None:
    path = cfr.cache_path("kuhn_poker", 55)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    policy = cfr.cfr_policy("kuhn_poker", 55)
    assert len(policy) == 12
    assert json.loads(path.read_text())["iterations"] == 55


def test_leduc_small_solve_plays_legal_moves(spiel_view) -> None:
    start = time.perf_counter()
    opponent = FACTORIES["cfr"]("leduc_poker", "20", 3)
    assert time.perf_counter() - start < 10
    game = pyspiel.load_game("leduc_poker")
    rng = np.random.default_rng(0)
    for _ in range(20):
        state = game.new_initial_state()
        while not state.is_terminal():
            if state.is_chance_node():
                actions, probs = zip(*state.chance_outcomes(), strict=True)
                state.apply_action(int(rng.choice(actions, p=probs)))
            else:
                action = opponent.act(spiel_view(state))
                assert action in state.legal_actions()
                state.apply_action(action)


def test_leduc_default_policy_is_near_equilibrium() -> None:
    """The default Leduc solve (about 4 s, then cached) is within 2e-3 of equilibrium."""
    policy = cfr.cfr_policy("leduc_poker", cfr.DEFAULT_ITERATIONS["leduc_poker"])
    assert len(policy) == 936
    assert pyspiel.exploitability(pyspiel.load_game("leduc_poker"), dict(policy)) < 2e-3


@pytest.mark.parametrize("name", ["cfr", "cfr-argmax"])
def test_cfr_arguments_and_arenas_are_checked(name: str) -> None:
    for bad in ("abc", "0", "-3", "1.5"):
        with pytest.raises(ArenaError, match=name):
            FACTORIES[name]("kuhn_poker", bad, 0)
    with pytest.raises(ArenaError, match=r"does not support arena 'tic_tac_toe'.*kuhn_poker, leduc_poker"):
        FACTORIES[name]("tic_tac_toe", None, 0)


def test_game_options_get_their_own_table(isolated_cache, spiel_view) -> None:
    game = pyspiel.load_game("kuhn_poker(players=3)")
    state = game.new_initial_state()
    for card in (0, 1, 2):
        state.apply_action(card)
    opponent = FACTORIES["cfr"]("kuhn_poker", "50", 0)
    assert opponent.act(spiel_view(state)) in (0, 1)
    assert cfr.cache_path("kuhn_poker(players=3)", 50).exists()
    assert cfr.cache_path("kuhn_poker(players=3)", 50).name == "kuhn_poker_players=3_cfrplus_50.json"
