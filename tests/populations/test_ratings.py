"""Elo and TrueSkill against hand-computed numbers and the ``trueskill`` package's documented examples."""

from __future__ import annotations

import json
import math

import pytest

from arena.core.errors import ArenaError
from arena.populations.ratings import (
    Rating,
    Ratings,
    draw_margin,
    elo_expected,
    elo_update,
    trueskill_update,
    v_win,
    w_win,
)
from arena.populations.settings import RatingsConfig

DEFAULTS = {"beta": 25 / 6, "tau": 25 / 300, "draw_probability": 0.10}
NEW = (25.0, 25 / 3)


def test_elo_equal_players():
    assert elo_expected(1000, 1000) == 0.5
    assert elo_update(1000, 1000, 1.0, 32) == (1016.0, 984.0)
    assert elo_update(1000, 1000, 0.0, 32) == (984.0, 1016.0)
    assert elo_update(1000, 1000, 0.5, 32) == (1000.0, 1000.0)


def test_elo_favourite_draws():
    # E = 1 / (1 + 10^(-200/400)) = 0.7597469; a draw costs the favourite 32 * (0.5 - 0.7597469) = 8.31190.
    a, b = elo_update(1200, 1000, 0.5, 32)
    assert a == pytest.approx(1191.68810, abs=1e-4)
    assert b == pytest.approx(1008.31190, abs=1e-4)


def test_trueskill_by_hand_without_dynamics():
    # tau = 0: c² = 2·(25/6)² + 2·(25/3)² = 173.6111, c = 13.17616;
    # ε = Φ⁻¹(0.55)·√2·25/6 = 0.125661·1.414214·4.166667 = 0.740467, e = ε/c = 0.0561975;
    # v = φ(−e)/Φ(−e) = 0.398313/0.477593 = 0.834002, w = v·(v − e) = 0.648690;
    # μ = 25 ± (69.4444/13.17616)·0.834002 = 25 ± 4.395576; σ² = 69.4444·(1 − 0.4·0.648690) = 51.4252, σ = 7.171141.
    assert draw_margin(0.10, 25 / 6) == pytest.approx(0.740467, abs=1e-6)
    e = 0.740467 / 13.17616
    assert v_win(0.0, e) == pytest.approx(0.834002, abs=1e-5)
    assert w_win(0.0, e) == pytest.approx(0.648690, abs=1e-5)
    (mu_w, s_w), (mu_l, s_l) = trueskill_update(NEW, NEW, 1.0, beta=25 / 6, tau=0.0, draw_probability=0.10)
    assert mu_w == pytest.approx(29.395576, abs=1e-5)
    assert mu_l == pytest.approx(20.604424, abs=1e-5)
    assert s_w == pytest.approx(7.171141, abs=1e-5)
    assert s_l == pytest.approx(7.171141, abs=1e-5)


def test_trueskill_matches_the_trueskill_package_docs():
    # trueskill docs: rate_1vs1(Rating(), Rating()) -> (29.396, 7.171), (20.604, 7.171).
    (mu_w, s_w), (mu_l, s_l) = trueskill_update(NEW, NEW, 1.0, **DEFAULTS)
    assert (round(mu_w, 3), round(s_w, 3), round(mu_l, 3), round(s_l, 3)) == (29.396, 7.171, 20.604, 7.171)
    # rate_1vs1(Rating(), Rating(), drawn=True) -> (25.000, 6.458) both.
    (mu_a, s_a), (mu_b, s_b) = trueskill_update(NEW, NEW, 0.5, **DEFAULTS)
    assert (round(mu_a, 3), round(s_a, 3), round(mu_b, 3), round(s_b, 3)) == (25.0, 6.458, 25.0, 6.458)
    # rate_1vs1(Rating(25, 8.333), Rating(30, 8.333)) -> (30.768, 7.030), (24.232, 7.030): an upset.
    (mu_w, s_w), (mu_l, s_l) = trueskill_update((25, 8.333), (30, 8.333), 1.0, **DEFAULTS)
    assert (round(mu_w, 3), round(s_w, 3), round(mu_l, 3), round(s_l, 3)) == (30.768, 7.030, 24.232, 7.030)


def test_trueskill_loss_mirrors_win_and_draws_pull_together():
    win = trueskill_update((25, 8.333), (30, 8.333), 1.0, **DEFAULTS)
    loss = trueskill_update((30, 8.333), (25, 8.333), 0.0, **DEFAULTS)
    assert loss[0] == pytest.approx(win[1]) and loss[1] == pytest.approx(win[0])
    (mu_a, s_a), (mu_b, s_b) = trueskill_update((30, 4), (20, 4), 0.5, **DEFAULTS)
    assert 20 < mu_b < mu_a < 30 and mu_a + mu_b == pytest.approx(50)
    assert s_a < 4 and s_b < 4


def test_trueskill_extreme_upset_stays_finite():
    for score in (1.0, 0.5):
        (mu_a, s_a), (mu_b, s_b) = trueskill_update((0, 1), (1000, 1), score, **DEFAULTS)
        assert all(math.isfinite(x) for x in (mu_a, s_a, mu_b, s_b))
        assert mu_a > 0 and mu_b < 1000 and 0 < s_a < 1 and 0 < s_b < 1


def test_ratings_table_counts_and_order():
    r = Ratings(RatingsConfig())
    r.record("a", "b", 1.0)
    r.record("a", "c", 0.5)
    r.record("b", "c", 0.0)
    rows = {row["name"]: row for row in r.table()}
    assert rows["a"]["elo"] == pytest.approx(1016.0 + 32 * (0.5 - elo_expected(1016.0, 1000.0)))
    assert (rows["a"]["games"], rows["a"]["wins"], rows["a"]["draws"], rows["a"]["losses"]) == (2, 1, 1, 0)
    assert (rows["c"]["games"], rows["c"]["wins"], rows["c"]["draws"], rows["c"]["losses"]) == (2, 1, 1, 0)
    assert (rows["b"]["games"], rows["b"]["wins"], rows["b"]["draws"], rows["b"]["losses"]) == (2, 0, 0, 2)
    table = r.table()
    assert [row["conservative"] for row in table] == sorted((row["conservative"] for row in table), reverse=True)
    assert table[-1]["name"] == "b"
    for row in table:
        assert row["conservative"] == pytest.approx(row["mu"] - 3 * row["sigma"])
        assert set(row) == {"name", "elo", "mu", "sigma", "conservative", "games", "wins", "draws", "losses"}


def test_ratings_state_round_trip_through_json():
    r = Ratings(RatingsConfig(elo_k=16))
    r.add("snap", Rating(elo=1100.0, mu=27.0, sigma=6.0))
    r.record("a", "snap", 0.0)
    r.record("a", "b", 0.5)
    state = json.loads(json.dumps(r.state_dict()))
    again = Ratings(RatingsConfig(elo_k=16))
    again.load_state_dict(state)
    assert again.table() == r.table()
    r.record("b", "snap", 1.0)
    again.record("b", "snap", 1.0)
    assert again.table() == r.table()


def test_ratings_reject_bad_games():
    r = Ratings()
    with pytest.raises(ArenaError, match=r"0\.5 \(draw\)"):
        r.record("a", "b", 0.7)
    with pytest.raises(ArenaError, match="itself"):
        r.record("a", "a", 1.0)
    r.add("a")
    with pytest.raises(ArenaError, match="already rated"):
        r.add("a")
    with pytest.raises(ArenaError):
        r.load_state_dict({"players": []})
