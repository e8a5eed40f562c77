"""The opponent pool: who a learner may draw, PFSP weights from hand-made records, snapshot cap, state."""

from __future__ import annotations

import json

import numpy as np
import pytest

from arena.core.api.errors import ArenaError
from arena.populations.pool import MatchStats, OpponentPool, PoolMember, pfsp_priority
from arena.populations.settings import PFSPConfig

HARD = PFSPConfig(enabled=True, weighting="hard")
VARIANCE = PFSPConfig(enabled=True, weighting="variance")


def pool_of(*names: str, weights: dict[str, float] | None = None) -> OpponentPool:
    weights = weights or {}
    return OpponentPool([PoolMember(name=n, spec=n, weight=weights.get(n, 1.0)) for n in names])


def play(pool: OpponentPool, learner: str, member: str, wins: int = 0, draws: int = 0, losses: int = 0) -> None:
    for score, n in ((1.0, wins), (0.5, draws), (0.0, losses)):
        for _ in range(n):
            pool.record(learner, member, score)


def test_win_probability_has_an_even_prior():
    assert MatchStats().win_probability(1.0) == 0.5
    # (3 wins + 1 draw/2 + 0.5) / (4 games + 1) = 0.8
    assert MatchStats(wins=3, draws=1).win_probability(1.0) == pytest.approx(0.8)


def test_priority_functions():
    assert pfsp_priority(0.25, PFSPConfig(weighting="hard", power=2.0)) == pytest.approx(0.5625)
    assert pfsp_priority(0.25, PFSPConfig(weighting="linear")) == pytest.approx(0.75)
    xs = np.linspace(0, 1, 101)
    values = [pfsp_priority(float(x), VARIANCE) for x in xs]
    assert xs[int(np.argmax(values))] == pytest.approx(0.5)
    assert values[0] == values[-1] == 0.0


def test_disabled_pfsp_follows_the_configured_weights():
    pool = pool_of("a", "b", "c", weights={"a": 0.3, "b": 0.3, "c": 0.4})
    play(pool, "L", "a", wins=50)
    assert pool.sampling_weights("L", PFSPConfig()) == pytest.approx({"a": 0.3, "b": 0.3, "c": 0.4})


def test_hard_pfsp_forgets_a_member_the_learner_always_beats():
    pool = pool_of("beaten", "unseen", "strong")
    play(pool, "L", "beaten", wins=200)
    play(pool, "L", "strong", losses=10)
    w = pool.sampling_weights("L", HARD)
    assert sum(w.values()) == pytest.approx(1.0)
    assert w["beaten"] < 1e-4
    assert w["strong"] > w["unseen"] > 0.1
    # Hand computation: x = (0, ≈1, 0.5/11) → f = ((0.5/201)², 0.25, (10.5/11)²); normalised.
    f = np.array([(0.5 / 201) ** 2, 0.25, (10.5 / 11) ** 2])
    assert list(w.values()) == pytest.approx(list(f / f.sum()))


def test_variance_pfsp_prefers_even_matches():
    pool = pool_of("beaten", "even", "strong")
    play(pool, "L", "beaten", wins=40)
    play(pool, "L", "even", wins=20, losses=20)
    play(pool, "L", "strong", losses=40)
    w = pool.sampling_weights("L", VARIANCE)
    assert w["even"] > 0.9 and w["beaten"] == pytest.approx(w["strong"])


def test_draws_count_half_and_records_are_per_learner():
    pool = pool_of("m", "n")
    play(pool, "L", "m", draws=30)
    play(pool, "K", "m", wins=30)
    assert pool.sampling_weights("L", VARIANCE) == pytest.approx({"m": 0.5, "n": 0.5})
    assert pool.sampling_weights("K", VARIANCE)["m"] < 0.1


def test_mix_blends_the_two_distributions():
    pool = pool_of("a", "b", weights={"a": 3.0, "b": 1.0})
    play(pool, "L", "a", wins=100)
    pure = pool.sampling_weights("L", HARD)
    half = pool.sampling_weights("L", PFSPConfig(enabled=True, mix=0.5))
    base = {"a": 0.75, "b": 0.25}
    assert half == pytest.approx({k: 0.5 * base[k] + 0.5 * pure[k] for k in base})
    assert pool.sampling_weights("L", PFSPConfig(enabled=True, mix=0.0)) == pytest.approx(base)


def test_a_learner_never_draws_itself_or_its_live_seat():
    pool = OpponentPool(
        [
            PoolMember("random", "random"),
            PoolMember("L", "model:tiny", kind="learner", owner="L"),
            PoolMember("K", "model:k", kind="learner", owner="K"),
            PoolMember("same-seat", "model:tiny", kind="model"),
        ],
        learner_specs={"L": "model:tiny", "K": "model:k"},
    )
    assert list(pool.sampling_weights("L", PFSPConfig())) == ["random", "K"]
    assert list(pool.sampling_weights("K", PFSPConfig())) == ["random", "L", "same-seat"]
    rng = np.random.default_rng(0)
    assert {pool.sample("L", rng, HARD).name for _ in range(200)} == {"random", "K"}


def test_no_positive_weight_names_the_learner():
    pool = pool_of("a", weights={"a": 0.0})
    with pytest.raises(ArenaError, match="'alice'"):
        pool.sampling_weights("alice", PFSPConfig())
    with pytest.raises(ArenaError, match="'alice'"):
        OpponentPool(learner_specs={"alice": "model:x"}).sample("alice", np.random.default_rng(0), HARD)


def test_sample_follows_the_weights():
    pool = pool_of("a", "b", "c", weights={"a": 0.2, "b": 0.3, "c": 0.5})
    rng = np.random.default_rng(1)
    names = [pool.sample("L", rng, PFSPConfig()).name for _ in range(4000)]
    for name, p in {"a": 0.2, "b": 0.3, "c": 0.5}.items():
        assert names.count(name) / 4000 == pytest.approx(p, abs=0.03)


def test_snapshot_cap_drops_the_oldest_of_the_same_owner():
    pool = pool_of("random")
    for it in (2, 4, 6):
        for owner in ("L", "K"):
            dropped = pool.add_snapshot(
                PoolMember(f"{owner}@it{it}", f"model:/{owner}/{it}", kind="snapshot", owner=owner, added_at=it), 2
            )
            assert [m.name for m in dropped] == ([f"{owner}@it2"] if it == 6 else [])
        play(pool, "L", f"K@it{it}", wins=1)
    assert list(pool.members) == ["random", "L@it4", "K@it4", "L@it6", "K@it6"]
    assert pool.stats("L", "K@it2").games == 0  # a dropped member's record goes with it
    assert pool.stats("L", "K@it4").games == 1
    with pytest.raises(ArenaError, match="already has"):
        pool.add(PoolMember("random", "random"))
    with pytest.raises(ArenaError, match="not a snapshot"):
        pool.add_snapshot(PoolMember("x", "x"), 2)
    with pytest.raises(ArenaError, match="no member"):
        pool.record("L", "K@it2", 1.0)


def test_state_round_trip_through_json():
    pool = OpponentPool([PoolMember("a", "a", 0.5), PoolMember("b", "model:/b", 2.0, "model")], {"L": "model:l"})
    pool.add_snapshot(PoolMember("L@it1", "model:/s", 1.0, "snapshot", "L", 1), 3)
    play(pool, "L", "a", wins=3, draws=1)
    play(pool, "L", "L@it1", losses=2)
    state = json.loads(json.dumps(pool.state_dict()))
    again = OpponentPool()
    again.load_state_dict(state)
    assert again.members == pool.members
    assert again.learner_specs == pool.learner_specs
    assert again.sampling_weights("L", HARD) == pool.sampling_weights("L", HARD)
    assert again.stats("L", "a") == MatchStats(3, 1, 0)
    with pytest.raises(ArenaError, match="malformed"):
        again.load_state_dict({"members": []})
