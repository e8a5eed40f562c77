"""The text maze: PettingZoo conformance, seeded layouts and splits, doors and keys, the note, the expert, copies."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena.arenas.text_maze import (
    ACTION_OF,
    COMMANDS,
    SIZES,
    TextMazeEnv,
    TextMazeExplorer,
    explorer_action,
    generate_layout,
    is_held_out,
    iter_layouts,
    layout_id_for,
    note_before_chest,
    solve,
)
from arena.core.api.arena import SeatView
from arena.core.rollout.text_adapter import action_mask_of, parse_action

pytestmark = pytest.mark.filterwarnings(
    "ignore:Observation space for each agent probably:UserWarning",
    "ignore:Observation is not a NumPy array:UserWarning",
)


def view(env: TextMazeEnv) -> SeatView:
    """The seat's view as the engine builds it; after the episode's last ``step(None)`` the engine passes no obs."""
    if not env.agents:
        return SeatView(env, "player_0", 0, None, None, {})
    obs, _, _, _, info = env.last()
    return SeatView(env, "player_0", 0, obs, action_mask_of(obs, info), dict(info))


def random_episode(env: TextMazeEnv, seed: int, rng: np.random.Generator) -> list[int]:
    """A uniformly random legal-move episode on ``seed``; returns the actions played."""
    env.reset(seed=seed)
    return play_on(env, rng)


def play_on(env: TextMazeEnv, rng: np.random.Generator) -> list[int]:
    actions = []
    for _agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        action = None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"])))
        if action is not None:
            actions.append(action)
        env.step(action)
    return actions


def success_rate(size: str, split: str, seeds: range, policy: str) -> float:
    env = TextMazeEnv(split=split, size=size)
    rng = np.random.default_rng(0)
    wins = 0
    for seed in seeds:
        if policy == "random":
            random_episode(env, seed, rng)
        else:
            env.reset(seed=seed)
            solve(env, read_notes=policy == "solver")
        wins += env.goal_reached
    return wins / len(seeds)


def trace(env: TextMazeEnv, actions: list[int]) -> list[tuple[str, float, bool, bool]]:
    """(observation text, reward, termination, truncation) after each of ``actions``."""
    out = []
    adapter = env.arena_text_adapter
    for action in actions:
        env.step(action)
        _, reward, term, trunc, _ = env.last()
        out.append((adapter.observation(view(env)), float(reward), term, trunc))
    return out


# -- PettingZoo API and registration --------------------------------------------------------------------------


@pytest.mark.parametrize("size", sorted(SIZES))
def test_api(size: str) -> None:
    api_test(TextMazeEnv(size=size), num_cycles=60)


def test_registered_factory(factories: dict[str, Any]) -> None:
    env = factories["text_maze"](split="test", size="medium", max_steps=12)
    env.reset(seed=4)
    assert env.max_steps == 12 and is_held_out(env.layout.layout_id)
    assert env.unwrapped.arena_text_adapter is not None


def test_vocabulary_is_fixed_across_sizes_and_layouts() -> None:
    for size in SIZES:
        env = TextMazeEnv(size=size)
        assert env.action_space("player_0").n == len(COMMANDS) == 22
        for seed in range(5):
            env.reset(seed=seed)
            obs = env.observe("player_0")
            assert obs["action_mask"].shape == (len(COMMANDS),)
            assert env.observation_space("player_0").contains(obs)


def test_bad_arguments_are_rejected() -> None:
    with pytest.raises(ValueError, match="split"):
        TextMazeEnv(split="dev")
    with pytest.raises(ValueError, match="size"):
        TextMazeEnv(size="huge")
    env = TextMazeEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="action"):
        env.step(len(COMMANDS))


# -- layouts, seeds, splits -------------------------------------------------------------------------------------


def test_same_seed_same_layout_and_text() -> None:
    a, b = TextMazeEnv(size="medium"), TextMazeEnv(size="medium")
    rng = np.random.default_rng(3)
    actions = random_episode(a, 11, rng)
    b.reset(seed=11)
    a.reset(seed=11)
    assert a.layout == b.layout == generate_layout(layout_id_for(11, "train"), "medium")
    assert trace(a, actions) == trace(b, actions)


def test_different_seeds_different_layouts() -> None:
    signatures = {repr(layout) for layout in iter_layouts("train", "small", range(50))}
    assert len(signatures) == 50


def test_held_out_layouts_are_disjoint_from_train() -> None:
    train = iter_layouts("train", "small", range(900))
    test = iter_layouts("test", "small", range(100))
    assert not any(is_held_out(layout.layout_id) for layout in train)
    assert all(is_held_out(layout.layout_id) for layout in test)
    assert not {layout.task_id for layout in train} & {layout.task_id for layout in test}

    def content(layout: Any) -> str:  # the house itself, without its id
        return repr((layout.rooms, layout.exits, layout.locks, layout.keys, layout.containers, layout.note))

    assert not {content(layout) for layout in train} & {content(layout) for layout in test}


def test_split_mapping_is_a_bijection() -> None:
    train = [layout_id_for(s, "train") for s in range(1000)]
    test = [layout_id_for(s, "test") for s in range(1000)]
    assert len(set(train)) == 1000 and len(set(test)) == 1000
    assert sorted(train)[:10] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert test[:3] == [9, 19, 29]
    assert layout_id_for(123, "all") == 123


@pytest.mark.parametrize("size", sorted(SIZES))
def test_every_lock_on_the_way_and_keys_before_their_doors(size: str) -> None:
    spec = SIZES[size]
    for layout in iter_layouts("all", size, range(50)):
        assert len(layout.rooms) == spec.rooms
        assert len(layout.locks) == spec.locks
        assert len(layout.keys) == spec.locks + spec.decoy_keys
        assert sum(1 for x in layout.containers if "chest" in x) == spec.chests
        assert layout.note[0] != layout.vault
        for direction, room in layout.exits[0].items():  # exits are two-way and consistent
            assert (
                layout.exits[room][{"north": "south", "south": "north", "east": "west", "west": "east"}[direction]] == 0
            )


# -- mechanics --------------------------------------------------------------------------------------------------


def find_start_with_locked_door(size: str = "small") -> tuple[TextMazeEnv, str, str]:
    """An env reset on a layout whose start room has a locked door; returns (env, direction, colour)."""
    env = TextMazeEnv(size=size)
    for seed in range(200):
        env.reset(seed=seed)
        doors = env.locked_doors_here()
        if doors:
            direction, colour = next(iter(doors.items()))
            return env, direction, colour
    raise AssertionError("no layout with a locked door at the start")


def test_locked_door_stays_locked_without_the_key() -> None:
    env, direction, colour = find_start_with_locked_door()
    room = env.state.room
    assert colour not in env.state.inventory
    env.step(ACTION_OF[f"go {direction}"])
    assert env.state.room == room and "locked" in env.state.last
    env.step(ACTION_OF[f"unlock {colour} door"])
    assert env.locked_doors_here() == {direction: colour} and "need the" in env.state.last
    env.step(ACTION_OF[f"go {direction}"])
    assert env.state.room == room
    # With the key the same door opens (the key's place is known to the generator, not to the player).
    env.state.inventory.append(colour)
    env.step(ACTION_OF[f"unlock {colour} door"])
    env.step(ACTION_OF[f"go {direction}"])
    assert env.state.room == env.layout.exits[room][direction]


def test_treasure_pays_one_and_a_trapped_chest_ends_with_nothing() -> None:
    env = TextMazeEnv()
    env.reset(seed=0)
    assert solve(env) == 1.0
    assert env.arena_outcome({"player_0": 1.0}, "player_0") == "win"
    details = env.arena_text_adapter.episode_details(view(env))
    assert details["score"] == 1.0 and details["task_id"] == env.layout.task_id
    assert set(details["outcome_key"].split(",")) >= {"note", "chest", "treasure"}

    # Same layout: walk to the vault with the expert, then open a chest the note does not name.
    env.reset(seed=0)
    wrong = next(
        x for x, r in env.layout.containers.items() if r == env.layout.vault and x != env.layout.treasure_chest
    )
    for _ in range(env.max_steps):
        if env.state.room == env.layout.vault and not env.locked_doors_here() and not env.visible_keys():
            break
        env.step(explorer_action(env))
    env.step(ACTION_OF[f"open {wrong}"])
    assert env.terminations["player_0"] and env.rewards["player_0"] == 0.0
    assert env.state.trapped == wrong and env.arena_outcome({"player_0": 0.0}, "player_0") == "loss"
    assert "trap" in env.arena_text_adapter.episode_details(view(env))["outcome_key"]


def test_step_limit_truncates_with_no_reward() -> None:
    env = TextMazeEnv(max_steps=5)
    env.reset(seed=1)
    for _ in range(5):
        assert not env.truncations["player_0"]
        env.step(ACTION_OF["look"])
    assert env.truncations["player_0"] and not env.terminations["player_0"]
    assert env._cumulative_rewards["player_0"] == 0.0
    assert "Time ran out" in env.arena_text_adapter.episode_summary(view(env))
    env.step(None)
    assert env.agents == []


def test_masked_command_wastes_a_step() -> None:
    env = TextMazeEnv()
    env.reset(seed=2)
    illegal = int(np.flatnonzero(env.action_mask() == 0)[0])
    env.step(illegal)
    assert env.state.steps == 1 and "can't" in env.state.last


# -- the note ---------------------------------------------------------------------------------------------------


def test_the_chest_is_not_observable_before_the_note_is_read() -> None:
    env = TextMazeEnv(size="medium")
    env.reset(seed=7)
    adapter = env.arena_text_adapter
    texts = []
    for _ in range(env.max_steps):
        if env.state.note_read or env.terminations["player_0"]:
            break
        texts.append(adapter.observation(view(env)))
        assert env.observe("player_0")["observation"][list(env.OBS_FIELDS).index("known_chest")] == 0
        env.step(explorer_action(env))
    assert env.state.note_read
    assert not any("treasure is in" in text for text in texts)
    assert f"treasure is in the {env.layout.treasure_chest}" in adapter.observation(view(env))


def test_skipping_the_note_does_worse() -> None:
    seeds = range(100)
    with_note = success_rate("medium", "train", seeds, "solver")
    without = success_rate("medium", "train", seeds, "no-note")
    assert with_note == 1.0
    assert 0.2 < without < 0.75  # a guess among two chests


# -- expert and random policy -----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", sorted(SIZES))
@pytest.mark.parametrize("split", ["train", "test"])
def test_expert_solves_almost_every_layout(size: str, split: str) -> None:
    assert success_rate(size, split, range(100), "solver") >= 0.95


def test_random_policy_succeeds_rarely() -> None:
    rates = {size: success_rate(size, "train", range(200 if size == "small" else 60), "random") for size in SIZES}
    assert 0.0 < rates["small"] < 0.2  # measured 0.075 (docs/arena_text_maze.md)
    assert rates["medium"] <= rates["small"] and rates["large"] <= rates["small"]


def test_explorer_as_an_opponent() -> None:
    env = TextMazeEnv()
    env.reset(seed=9)
    explorer = TextMazeExplorer()
    action = explorer.act(view(env))
    assert env.action_mask()[action] == 1
    assert action == explorer_action(env)


# -- copies ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["small", "large"])
def test_restore_reproduces_the_future(size: str) -> None:
    env = TextMazeEnv(size=size)
    env.reset(seed=21)
    for _ in range(6):
        env.step(explorer_action(env))
    snapshot = env.get_state()
    rng = np.random.default_rng(5)
    actions = play_on(env, rng)
    # The trace from the snapshot, twice from the same snapshot, once through pickle into a fresh env.
    futures = []
    for target, snap in (
        (env, snapshot),
        (env, snapshot),
        (TextMazeEnv(size=size), pickle.loads(pickle.dumps(snapshot))),
    ):
        target.set_state(snap)
        futures.append((trace(target, actions), target.state.milestones[:], target.goal_reached))
    assert futures[0] == futures[1] == futures[2]
    # Restoring does not alias the snapshot: playing on did not change it.
    env.set_state(snapshot)
    assert env.state.steps == 6 and not env.terminations["player_0"]


def test_restore_refuses_another_size() -> None:
    env = TextMazeEnv(size="small")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="snapshot"):
        TextMazeEnv(size="large").set_state(env.get_state())


# -- text adapter ------------------------------------------------------------------------------------------------


def test_adapter_text_moves_and_parsing() -> None:
    env = TextMazeEnv()
    env.reset(seed=3)
    adapter = env.arena_text_adapter
    v = view(env)
    assert "treasure" in adapter.rules(v) and "30 steps" in adapter.rules(v)
    text = adapter.observation(v)
    assert text.startswith("Step 1 of 30.") and "Exits:" in text and "Last:" in text
    moves = adapter.legal_moves(v)
    assert [m.action for m in moves] == [int(a) for a in np.flatnonzero(env.action_mask())]
    assert all(adapter.action_name(v, m.action) == m.name for m in moves)
    go = next(m for m in moves if m.name.startswith("go "))
    assert parse_action(f"I will explore.\n<action>{go.name.upper()}</action>", moves).action == go.action
    assert parse_action(go.name.split()[1], moves).action == go.action
    taken = parse_action("take treasure", moves, adapter.all_moves(v))
    assert not taken.valid and taken.error is not None and "illegal" in taken.error
    assert len(text) < 600


def test_episode_summary_and_details_after_a_win() -> None:
    env = TextMazeEnv(size="medium")
    env.reset(seed=4)
    solve(env)
    v = SeatView(env, "player_0", 0, None, None, {})
    summary = env.arena_text_adapter.episode_summary(v)
    assert summary.startswith("You found the treasure") and "Rooms visited" in summary
    details = env.arena_text_adapter.episode_details(v)
    assert details["rooms_visited"] == len(env.state.visited) and details["score"] == 1.0
    assert details["outcome_key"] == ",".join(sorted(env.state.milestones))


# -- through the rollout engine ------------------------------------------------------------------------------------


def test_trials_through_the_engine() -> None:
    from arena.core.api.records import TrialSpec
    from arena.core.host.plugins import PluginSet
    from arena.core.rollout.engine import RolloutEngine

    from ..core.helpers import scripted_pool

    pool, _ = scripted_pool()
    engine = RolloutEngine(PluginSet(()), backends=pool)
    specs = [
        TrialSpec(trial_id=f"t{i}", arena_id="text_maze", seats=("model:scripted",), seed=i, episodes=2)
        for i in range(3)
    ]
    for trial in engine.run(specs):
        first, second = trial.episodes
        assert first.steps[0].observation == second.steps[0].observation  # each episode restarts the layout
        for episode in trial.episodes:
            won = episode.returns["player_0"] == 1.0
            assert episode.outcomes["player_0"] == ("win" if won else "loss")
            assert "Rooms visited" in episode.summaries["player_0"]
            details = episode.details["player_0"]
            assert details["task_id"] == generate_layout(layout_id_for(trial.spec.seed, "train"), "small").task_id
            assert len(episode.steps) <= 30


# -- SAFARI's testbed: the explorer against the hindsight-biased demonstrator (issue 26) --------------------------


def _demonstrate(size: str, seeds: range, **kwargs: bool) -> tuple[float, list[bool | None]]:
    env = TextMazeEnv(split="train", size=size)
    wins, orders = 0.0, []
    for seed in seeds:
        env.reset(seed=seed)
        wins += solve(env, **kwargs)
        orders.append(note_before_chest(env.state.milestones))
    return wins / len(seeds), orders


@pytest.mark.parametrize("size", ["small", "medium"])
def test_the_explorer_reads_the_note_first_and_the_hindsight_demonstrator_never_does(size: str) -> None:
    """The testbed's two demonstrators: both win every layout; only the explorer's lines show the note read
    before a chest is opened. A student of the hindsight lines sees every chest choice made without the note."""
    explorer_wins, explorer_orders = _demonstrate(size, range(120))
    hindsight_wins, hindsight_orders = _demonstrate(size, range(120), hindsight=True)
    assert explorer_wins == hindsight_wins == 1.0
    assert explorer_orders == [True] * 120
    assert hindsight_orders == [False] * 120


def test_hindsight_lines_are_never_longer_than_the_explorers() -> None:
    """It skips the walk to the note, so SAFARI's length penalty scores its lines at least as high."""
    env = TextMazeEnv(split="train", size="small")
    for seed in range(60):
        env.reset(seed=seed)
        solve(env)
        explorer_steps = env.state.steps
        env.reset(seed=seed)
        solve(env, hindsight=True)
        assert env.state.steps <= explorer_steps


@pytest.mark.parametrize("size", ["small", "medium"])
def test_the_note_blind_ceiling_is_one_chest_in_the_vault(size: str) -> None:
    """The ceilings of the testbed by enumeration: a player that reaches the vault and opens one chest without the
    note wins exactly one of the layout's chest choices (1/chests over the choices, any layout); reading the note
    first wins them all. Checked by opening every chest from the state where the explorer reaches the vault."""
    chests = SIZES[size].chests
    env = TextMazeEnv(split="train", size=size)
    for seed in range(40):
        env.reset(seed=seed)
        while env.state.room != env.layout.vault:
            env.step(explorer_action(env, read_notes=False))
        snapshot = env.get_state()
        in_vault = [x for x, room in env.layout.containers.items() if room == env.layout.vault and x.endswith("chest")]
        assert len(in_vault) == chests
        won = []
        for chest in in_vault:
            env.set_state(snapshot)
            env.step(ACTION_OF[f"open {chest}"])
            won.append(env.state.trapped is None)
        assert sum(won) == 1
        assert note_before_chest(env.state.milestones) is False


def test_note_before_chest_reads_the_order_of_milestones() -> None:
    assert note_before_chest([]) is None
    assert note_before_chest(["key:red", "note"]) is None
    assert note_before_chest(["note", "door:red", "chest", "treasure"]) is True
    assert note_before_chest(["door:red", "chest", "note"]) is False
    assert note_before_chest(["door:red", "trap"]) is False


def test_episode_details_carry_note_before_chest() -> None:
    env = TextMazeEnv(split="train", size="small")
    env.reset(seed=3)
    solve(env)
    assert env.arena_text_adapter.episode_details(view(env))["note_before_chest"] is True
    env.reset(seed=3)
    solve(env, hindsight=True)
    assert env.arena_text_adapter.episode_details(view(env))["note_before_chest"] is False
