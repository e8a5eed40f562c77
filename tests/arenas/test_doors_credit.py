"""MAGE's and per-episode GRPO's expected episode-1 advantage of scouting in ``doors`` (issue 24, item 2).

The numbers come from the plugins' own advantage functions on hand-built groups, enumerated exactly; a Monte Carlo
run through the real ``DoorsEnv`` checks the trial types they are built from.
"""

from __future__ import annotations

import numpy as np
import pytest

from arena.arenas.doors import SCOUT, DoorsEnv
from arena.arenas.doors_credit import TrialType, scout_advantage, trial_types

UNIFORM_10 = 1 / 11  # the untrained start: uniform over scout and the 10 doors


def test_mage_pushes_towards_scouting_with_ten_doors_and_grpo_away() -> None:
    mage = scout_advantage(10, "mage", 0.6, p_scout=UNIFORM_10)
    grpo = scout_advantage(10, "grpo", p_scout=UNIFORM_10)
    assert mage > 0.15 and grpo < -0.1  # computed: +0.216 and -0.156
    assert scout_advantage(10, "grpo", p_scout=UNIFORM_10, std_norm=True) < 0
    assert scout_advantage(10, "mage", 0.6, p_scout=0.5) > 0


def test_mage_does_not_scout_with_four_doors_or_without_cross_episode_credit() -> None:
    assert scout_advantage(4, "mage", 0.6, p_scout=1 / 5) < 0
    assert scout_advantage(10, "mage", 0.0, p_scout=UNIFORM_10) < 0


def test_two_doors_by_hand() -> None:
    # 2 doors, 3 episodes, p_scout 1/2. Trial types: scout first -> (0,1,1) w.p. 1/2; guess right -> (1,1,1) w.p.
    # 1/4; guess wrong -> the other door is the one left: (0,1,1) w.p. 1/4. Per-episode GRPO, mean only, gives the
    # own episode-1 sample r_1 - (sum of the group's 24 returns)/24; the other trials do not depend on the own
    # choice, so E[A|scout] - E[A|guess] = (E[r_1|scout] - E[r_1|guess]) - (E[own sum|scout] - E[own sum|guess])/24
    # = (0 - 1/2) - (2 - 2.5)/24.
    types = trial_types(2, 3, 0.5)
    assert types == pytest.approx(
        {
            TrialType(True, (0.0, 1.0, 1.0)): 0.5,
            TrialType(False, (1.0, 1.0, 1.0)): 0.25,
            TrialType(False, (0.0, 1.0, 1.0)): 0.25,
        }
    )
    assert scout_advantage(2, "grpo", p_scout=0.5) == pytest.approx(-0.5 + 0.5 / 24)


def test_trial_types_match_play_in_the_real_env() -> None:
    # The behaviour of the module docstring, played in DoorsEnv: scout with p where the door is unknown, else a
    # uniform door not ruled out; once known, open it.
    rng = np.random.default_rng(0)
    env = DoorsEnv(doors=5)
    counts: dict[TrialType, int] = {}
    n = 4000
    for seed in range(n):
        known, ruled_out, returns, first = None, set(), [], None
        for _ in range(3):
            env.reset(seed=seed)
            if known is not None:
                action = known
            elif rng.random() < 0.3:
                action = SCOUT
            else:
                action = int(rng.choice([d for d in range(1, 6) if d not in ruled_out]))
            env.step(action)
            first = action == SCOUT if first is None else first
            returns.append(env.rewards["player_0"])
            if action == SCOUT or env.found:
                known = env.prize
            else:
                ruled_out.add(action)
                if len(ruled_out) == 4:  # one door left: known
                    known = env.prize
        key = TrialType(first, tuple(returns))
        counts[key] = counts.get(key, 0) + 1
    expected = trial_types(5, 3, 0.3)
    assert set(counts) == set(expected)
    for key, p in expected.items():
        assert counts[key] / n == pytest.approx(p, abs=4 * np.sqrt(p * (1 - p) / n))


def test_rejects_degenerate_behaviour() -> None:
    with pytest.raises(ValueError, match="p_scout"):
        scout_advantage(10, p_scout=0.0)
    with pytest.raises(ValueError, match="method"):
        scout_advantage(10, "ppo", p_scout=0.5)
