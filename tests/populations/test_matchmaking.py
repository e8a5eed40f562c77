"""Matchmaking: one opponent per group, seeds and seats derived from the run seed, the iteration, the learner."""

from __future__ import annotations

import numpy as np
import pytest

from arena.core.api.errors import ArenaError
from arena.core.api.seeding import derive_seed
from arena.populations.matchmaking import Matchup, default_matchups
from arena.populations.pool import OpponentPool, PoolMember
from arena.populations.settings import PFSPConfig

POOL = OpponentPool([PoolMember(n, n, w) for n, w in (("conservative", 0.3), ("aggressive", 0.3), ("mcts:100", 0.4))])


def make(iteration: int = 0, learners=("L",), seed: int = 7, seat="random", groups: int = 16) -> list[Matchup]:
    return default_matchups(POOL, list(learners), iteration, groups, seat, seed, PFSPConfig())


def test_same_seed_same_matchups_and_the_documented_derivation():
    first = make()
    assert make() == first
    assert [m.group_id for m in first[:2]] == ["it00000-L-g000", "it00000-L-g001"]
    assert first[3].seed == derive_seed(7, "group", 0, "L", 3) % 2**31
    # The opponent and the seat come from one generator per (iteration, learner), in that order.
    rng = np.random.default_rng(derive_seed(7, "matchups", 0, "L"))
    for m in first:
        assert m.opponent == POOL.sample("L", rng, PFSPConfig()).name
        assert m.learner_first == (int(rng.integers(2)) == 0)
        assert m.opponent_spec == POOL.members[m.opponent].spec


def test_iteration_seed_and_learner_change_the_draw():
    base = make()
    assert make(iteration=1) != base
    assert [m.seed for m in make(iteration=1)] != [m.seed for m in base]
    assert make(seed=8) != base
    both = make(learners=("L", "K"))
    assert both[:16] == base  # a learner's matchups do not depend on the other learners
    assert [m.learner for m in both] == ["L"] * 16 + ["K"] * 16
    assert [m.opponent for m in both[16:]] != [m.opponent for m in base]


def test_fixed_seats_and_mixed_random_seats():
    assert all(m.learner_first for m in make(seat="first"))
    assert not any(m.learner_first for m in make(seat="last"))
    firsts = [m.learner_first for m in make(groups=400)]
    assert 0.4 < sum(firsts) / len(firsts) < 0.6
    with pytest.raises(ArenaError, match="learner_seat"):
        make(seat="middle")


def test_opponents_follow_the_weights():
    names = [m.opponent for m in make(groups=3000)]
    for name, p in (("conservative", 0.3), ("aggressive", 0.3), ("mcts:100", 0.4)):
        assert names.count(name) / len(names) == pytest.approx(p, abs=0.03)


def test_task_pool_makes_group_seeds_recur():
    fresh = [m.seed for it in range(20) for m in make(iteration=it, groups=8)]
    pooled = [
        m.seed for it in range(20) for m in default_matchups(POOL, ["a"], it, 8, "random", 0, PFSPConfig(), task_pool=5)
    ]
    assert len(set(fresh)) == len(fresh)  # 160 distinct deals
    assert set(pooled) == set(range(5))  # every one of the 5 tasks comes back
    unpooled = [m.seed for it in range(20) for m in default_matchups(POOL, ["a"], it, 8, "random", 0, PFSPConfig())]
    assert pooled == [s % 5 for s in unpooled]  # the documented derivation


def test_empty_pool_means_a_single_agent_arena():
    (m,) = default_matchups(OpponentPool(), ["a"], 3, 1, "random", 0, PFSPConfig(), task_pool=7)
    assert (m.opponent, m.opponent_spec, m.learner_first) == ("", "", True) and 0 <= m.seed < 7


def test_three_seats_fill_the_other_seats_from_the_pool():
    three = default_matchups(POOL, ["L"], 0, 300, "random", 7, PFSPConfig(), players=3)
    # After the opponent: the learner's seat (integers(3)), then one more member for the third seat.
    rng = np.random.default_rng(derive_seed(7, "matchups", 0, "L"))
    for m in three:
        assert m.opponent == POOL.sample("L", rng, PFSPConfig()).name
        assert m.learner_index == int(rng.integers(3))
        (extra,) = m.others
        assert extra[0] == POOL.sample("L", rng, PFSPConfig()).name and extra[1] == POOL.members[extra[0]].spec
        assert m.learner_first == (m.learner_index == 0)
        seats = m.seats("model:me")
        assert len(seats) == 3 and seats[m.learner_index] == "model:me"
        assert [s for i, s in enumerate(seats) if i != m.learner_index] == [m.opponent_spec, extra[1]]
        names = m.seat_names()
        assert names[m.learner_index] == "L" and [n for n in names if n != "L"] == [m.opponent, extra[0]]
    assert {m.learner_index for m in three} == {0, 1, 2}
    assert all(m.learner_index == 0 for m in default_matchups(POOL, ["L"], 0, 8, "first", 7, PFSPConfig(), players=3))
    assert all(m.learner_index == 2 for m in default_matchups(POOL, ["L"], 0, 8, "last", 7, PFSPConfig(), players=3))
    # Two seats draw exactly as before, with the learner at seat 0 or 1.
    two = make()
    assert default_matchups(POOL, ["L"], 0, 16, "random", 7, PFSPConfig(), players=2) == two
    assert all(m.others == () and m.learner_index == (0 if m.learner_first else 1) for m in two)
    assert [m.seats("model:me") for m in two[:2]] == [
        ("model:me", m.opponent_spec) if m.learner_first else (m.opponent_spec, "model:me") for m in two[:2]
    ]


def test_a_balanced_draw_gives_each_member_its_share_of_every_iteration() -> None:
    """With ``opponent_draw: balanced`` an iteration's groups meet the pool in proportion; a random draw of 2 groups
    against a 50/50 pool meets one member only about half the time (the collapse in docs/results.md, "Hidden types
    with SmolLM2-135M-Instruct, trained")."""
    pool = OpponentPool([PoolMember(n, n, 0.5) for n in ("rps-rock", "rps-paper")])

    def opponents(it: int, draw: str, groups: int = 2) -> list[str]:
        return [m.opponent for m in default_matchups(pool, ["L"], it, groups, "random", 0, PFSPConfig(), draw=draw)]

    assert all(sorted(opponents(it, "balanced")) == ["rps-paper", "rps-rock"] for it in range(50))
    one_sided = sum(len(set(opponents(it, "random"))) == 1 for it in range(50))
    assert 10 < one_sided < 40
    # Seats are still drawn, and the order of the two opponents varies.
    assert {opponents(it, "balanced")[0] for it in range(20)} == {"rps-rock", "rps-paper"}
    # Uneven weights: floor(p·groups) each, the rest by remainders; quotas 4.8 / 4.8 / 6.4 of 16 groups
    for it in range(20):
        drawn = [m.opponent for m in default_matchups(POOL, ["L"], it, 16, "random", 0, PFSPConfig(), draw="balanced")]
        counts = {n: drawn.count(n) for n in POOL.members}
        assert sum(counts.values()) == 16
        assert counts["conservative"] in (4, 5) and counts["aggressive"] in (4, 5) and counts["mcts:100"] in (6, 7)
    with pytest.raises(ArenaError, match="opponent_draw"):
        default_matchups(pool, ["L"], 0, 2, "random", 0, PFSPConfig(), draw="sorted")
