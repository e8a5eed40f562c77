"""The population manager: construction, record() from trial records, snapshots, and the checkpoint state."""

from __future__ import annotations

import json

import pytest

from arena.core.api.errors import ArenaError, ConfigError
from arena.core.api.records import EpisodeRecord, TrialRecord, TrialSpec
from arena.core.config.loader import load_config
from arena.populations.manager import Population
from arena.populations.settings import PFSPConfig, PopulationConfig, RatingsConfig
from tests.populations.helpers import trial

KUHN = [("conservative", 0.3), ("aggressive", 0.3), ("intermediate", 0.4)]
ONE = [("agent", "model:tiny")]
TWO = [("alice", "model:a"), ("bob", "model:b")]


def test_members_named_by_spec_with_kinds_and_ratings():
    pop = Population(PopulationConfig(), ONE, [*KUHN, ("model:/frozen", 1.0)], seed=0)
    assert list(pop.pool.members) == ["conservative", "aggressive", "intermediate", "model:/frozen"]
    assert [m.kind for m in pop.pool.members.values()] == ["scripted"] * 3 + ["model"]
    assert {row["name"] for row in pop.ratings_table()} == {"agent", *pop.pool.members}
    assert all(row["games"] == 0 for row in pop.ratings_table())


def test_bad_populations_are_arena_errors():
    with pytest.raises(ArenaError, match="twice"):
        Population(PopulationConfig(), ONE, [("random", 1.0), ("random", 2.0)], seed=0)
    with pytest.raises(ArenaError, match="'agent'"):
        Population(PopulationConfig(), ONE, [("random", 0.0)], seed=0)
    with pytest.raises(ArenaError, match="unique"):
        Population(PopulationConfig(), [("a", "model:a"), ("a", "model:b")], KUHN, seed=0)


def test_learners_as_opponents_never_pairs_a_learner_with_itself():
    config = PopulationConfig(learners_as_opponents=True, learner_weight=5.0)
    pop = Population(config, [*TWO, ("carol", "model:c")], [("random", 1.0)], seed=3)
    seen: dict[str, set[str]] = {}
    for it in range(20):
        for m in pop.matchups(it, groups=8, learner_seat="random"):
            assert m.opponent != m.learner
            assert m.opponent_spec != pop.learners[m.learner]
            seen.setdefault(m.learner, set()).add(m.opponent)
    assert seen == {
        "alice": {"random", "bob", "carol"},
        "bob": {"random", "alice", "carol"},
        "carol": {"random", "alice", "bob"},
    }
    # A lone learner with only itself in the pool has nobody to play.
    with pytest.raises(ArenaError, match="'solo'"):
        Population(config, [("solo", "model:s")], [], seed=0)


def test_record_scores_the_learner_in_the_final_episode():
    pop = Population(PopulationConfig(), ONE, KUHN, seed=0)
    # The learner sits second and wins the final episode (it lost the first one).
    pop.record(
        trial(("aggressive", "model:tiny"), "loss", {"learner": "agent", "opponent": "aggressive"}, earlier=["win"])
    )
    pop.record(trial(("model:tiny", "aggressive"), "draw", {"learner": "agent", "opponent": "aggressive"}))
    pop.record(trial(("model:tiny", "conservative"), "loss", {"learner": "agent", "opponent": "conservative"}))
    pop.record(trial(("model:tiny", "conservative"), "win", {"opponent": "conservative"}))  # no learner: ignored
    pop.record(trial(("model:tiny", "conservative"), "win"))  # no meta at all: ignored
    s = pop.pool.stats("agent", "aggressive")
    assert (s.wins, s.draws, s.losses) == (1, 1, 0)
    s = pop.pool.stats("agent", "conservative")
    assert (s.wins, s.draws, s.losses) == (0, 0, 1)
    rows = {r["name"]: r for r in pop.ratings_table()}
    assert (rows["agent"]["wins"], rows["agent"]["draws"], rows["agent"]["losses"]) == (1, 1, 1)
    assert rows["aggressive"]["losses"] == 1 and rows["conservative"]["wins"] == 1
    assert rows["intermediate"]["games"] == 0
    # Elo by hand: 1000 → 1016 (win), draw vs 984: 1016 + 32·(0.5 − E(1016, 984)).
    assert rows["aggressive"]["elo"] < 1000 < rows["conservative"]["elo"]
    summary = {r["member"]: r for r in pop.summary()["learners"]["agent"]}
    assert summary["aggressive"]["win_rate"] == 0.5 and summary["aggressive"]["score"] == 0.75
    assert summary["intermediate"]["win_rate"] is None


def test_record_finds_the_seat_or_asks_for_it():
    pop = Population(PopulationConfig(), ONE, [("model:tiny@vllm", 1.0)], seed=0)
    meta = {"learner": "agent", "opponent": "model:tiny@vllm"}
    pop.record(trial(("model:tiny@vllm", "model:tiny"), "win", meta))
    assert pop.pool.stats("agent", "model:tiny@vllm").losses == 1
    pop.record(trial(("model:tiny", "model:tiny"), "win", {**meta, "learner_seat": 0}))
    assert pop.pool.stats("agent", "model:tiny@vllm").wins == 1
    with pytest.raises(ArenaError, match="learner_seat"):
        pop.record(trial(("model:tiny", "model:tiny"), "win", meta))
    with pytest.raises(ArenaError, match="not a learner"):
        pop.record(trial(("model:x", "random"), "win", {"learner": "x", "opponent": "model:tiny@vllm"}))
    with pytest.raises(ArenaError, match="not in the population"):
        pop.record(trial(("model:tiny", "cfr"), "win", {"learner": "agent", "opponent": "cfr"}))


def test_a_game_between_learners_counts_for_both_sides():
    pop = Population(PopulationConfig(learners_as_opponents=True), TWO, [("random", 1.0)], seed=0)
    pop.record(trial(("model:b", "model:a"), "loss", {"learner": "alice", "opponent": "bob"}))
    assert pop.pool.stats("alice", "bob").wins == 1
    assert pop.pool.stats("bob", "alice").losses == 1
    rows = {r["name"]: r for r in pop.ratings_table()}
    assert rows["alice"]["games"] == rows["bob"]["games"] == 1


def test_evolve_adds_named_snapshots_and_caps_them():
    config = PopulationConfig(snapshot_every=2, max_snapshots=2, snapshot_weight=0.5)
    pop = Population(config, TWO, KUHN, seed=0)
    for _ in range(3):
        pop.record(trial(("model:a", "aggressive"), "win", {"learner": "alice", "opponent": "aggressive"}))
    calls: list[str] = []

    def snapshot(learner: str) -> str:
        calls.append(learner)
        return f"model:/runs/x/snapshots/{learner}-{len(calls)}"

    assert pop.evolve(1, snapshot) == [] and calls == []
    added = pop.evolve(2, snapshot)
    assert calls == ["alice", "bob"]
    assert [(m.name, m.spec, m.kind, m.owner, m.added_at, m.weight) for m in added] == [
        ("alice@it2", "model:/runs/x/snapshots/alice-1", "snapshot", "alice", 2, 0.5),
        ("bob@it2", "model:/runs/x/snapshots/bob-2", "snapshot", "bob", 2, 0.5),
    ]
    # A snapshot starts at its learner's ratings, with an empty record.
    alice, snap = pop.ratings.rating("alice"), pop.ratings.rating("alice@it2")
    assert snap == alice and alice.elo > 1000
    assert {r["name"]: r["games"] for r in pop.ratings_table()}["alice@it2"] == 0
    # Each learner may now draw both snapshots, its own included (fictitious self-play).
    assert {"alice@it2", "bob@it2"} <= set(pop.pool.sampling_weights("alice", PFSPConfig()))
    pop.evolve(4, snapshot)
    pop.evolve(6, snapshot)
    assert [m.name for m in pop.last_dropped] == ["alice@it2", "bob@it2"]
    assert [m.name for m in pop.pool.members.values() if m.kind == "snapshot"] == [
        "alice@it4",
        "bob@it4",
        "alice@it6",
        "bob@it6",
    ]
    assert "alice@it2" in {r["name"] for r in pop.ratings_table()}  # a dropped snapshot keeps its rating
    with pytest.raises(ArenaError, match="twice"):
        pop.evolve(6, snapshot)
    with pytest.raises(ArenaError, match="live seat spec"):
        pop.evolve(8, lambda learner: pop.learners[learner])
    assert Population(PopulationConfig(), ONE, KUHN, seed=0).evolve(5, snapshot) == []


def busy_population() -> Population:
    config = PopulationConfig(
        snapshot_every=1, max_snapshots=2, learners_as_opponents=True, pfsp=PFSPConfig(enabled=True)
    )
    pop = Population(config, TWO, KUHN, seed=11)
    outcomes = ["win", "loss", "draw", "win", "win"]
    for it in range(1, 4):
        for k, m in enumerate(pop.matchups(it, groups=4, learner_seat="random")):
            live = pop.learners[m.learner]
            seats = (live, m.opponent_spec) if m.learner_first else (m.opponent_spec, live)
            meta = {"learner": m.learner, "opponent": m.opponent}
            pop.record(trial(seats, outcomes[(it + k) % 5], meta, trial_id=m.group_id))
        pop.evolve(it, lambda learner, it=it: f"model:/snap/{learner}/{it}")
    return pop


def test_state_round_trip_restores_matchmaking_exactly():
    pop = busy_population()
    state = json.loads(json.dumps({"population": pop.state_dict()}))
    assert set(state["population"]) == {"version", "learners", "pool", "ratings"}
    restored = Population(pop.config, TWO, KUHN, seed=11)
    restored.load_state_dict(state["population"])
    assert restored.pool.members == pop.pool.members
    assert restored.matchups(4, 8, "random") == pop.matchups(4, 8, "random")
    assert restored.ratings_table() == pop.ratings_table()
    assert restored.summary() == pop.summary()
    # And they stay in step afterwards.
    for p in (pop, restored):
        p.record(trial(("model:a", "aggressive"), "win", {"learner": "alice", "opponent": "aggressive"}))
        p.evolve(4, lambda learner: f"model:/snap/{learner}/4")
    assert restored.state_dict() == pop.state_dict()
    with pytest.raises(ArenaError, match="learners"):
        Population(pop.config, ONE, KUHN, seed=11).load_state_dict(state["population"])


def test_config_loads_from_yaml_data():
    config = load_config(
        PopulationConfig,
        data={"snapshot_every": 5, "pfsp": {"enabled": True, "weighting": "variance"}, "ratings": {"elo_k": 16}},
        overrides=["pfsp.mix=0.5", "ratings.tau=0"],
    )
    assert config.pfsp == PFSPConfig(enabled=True, weighting="variance", mix=0.5)
    assert config.ratings == RatingsConfig(elo_k=16.0, tau=0.0)
    assert config.snapshot_every == 5 and config.max_snapshots == 4
    with pytest.raises(ConfigError, match="weighting"):
        load_config(PopulationConfig, data={"pfsp": {"weighting": "soft"}})
    with pytest.raises(ConfigError, match="mix"):
        load_config(PopulationConfig, data={"pfsp": {"mix": 1.5}})
    with pytest.raises(ConfigError, match="draw_probability"):
        load_config(PopulationConfig, data={"ratings": {"draw_probability": 0}})
    with pytest.raises(ConfigError, match="max_snapshots"):
        load_config(PopulationConfig, data={"max_snapshots": 0})


def three_seat_trial(seats: tuple[str, ...], returns: tuple[float, ...], meta: dict) -> TrialRecord:
    agents = [f"player_{i}" for i in range(len(seats))]
    best = max(returns)
    outcomes = {a: ("win" if r == best else "loss") for a, r in zip(agents, returns, strict=True)}
    episode = EpisodeRecord(
        trial_id="t3",
        index=0,
        seed=1,
        steps=(),
        returns=dict(zip(agents, returns, strict=True)),
        outcomes=outcomes,  # type: ignore[arg-type]
        invalid_actions=dict.fromkeys(agents, 0),
    )
    spec = TrialSpec(trial_id="t3", arena_id="liars_dice", seats=seats, seed=1, meta=meta)
    return TrialRecord(spec=spec, episodes=(episode,), reflections=())


def test_three_seat_trials_are_rated_as_one_ranked_game():
    pop = Population(PopulationConfig(), ONE, [("random", 1.0), ("cfr", 1.0)], seed=0)
    # The learner second of three, random first, cfr (not the trial's drawn opponent) last.
    meta = {"learner": "agent", "opponent": "random", "learner_seat": 1}
    pop.record(three_seat_trial(("random", "model:tiny", "cfr"), (1.0, 0.0, -1.0), meta))
    rows = {r["name"]: r for r in pop.ratings_table()}
    assert [rows[n]["elo"] for n in ("random", "agent", "cfr")] == [1016.0, 1000.0, 984.0]
    assert rows["random"]["mu"] > rows["agent"]["mu"] > rows["cfr"]["mu"]
    assert [rows[n]["games"] for n in ("random", "agent", "cfr")] == [1, 1, 1]
    # The pool's record (PFSP's input) is still the learner's outcome against the drawn opponent.
    assert pop.pool.stats("agent", "random").losses == 1
    # Two seats of one player count once, at their mean return; seat_names name players outside the pool.
    pop.record(three_seat_trial(("random", "model:tiny", "random"), (1.0, 0.0, -1.0), meta))
    assert {r["name"]: r["games"] for r in pop.ratings_table()}["random"] == 2
    named = {**meta, "seat_names": ["x", "agent", "y"]}
    pop.record(three_seat_trial(("random", "model:tiny", "random"), (-1.0, 2.0, -1.0), named))
    rows = {r["name"]: r for r in pop.ratings_table()}
    assert rows["x"]["games"] == rows["y"]["games"] == 1 and rows["x"]["mu"] == rows["y"]["mu"]
    with pytest.raises(ArenaError, match="seat_names"):
        pop.record(three_seat_trial(("random", "model:tiny", "cfr"), (1.0, 0.0, -1.0), {**meta, "seat_names": ["x"]}))
