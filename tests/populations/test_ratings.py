"""Elo by hand; openskill against its documented examples and Weng-Lin's Algorithm 4 worked by hand; multi-player
games; the version-1 (hand-written TrueSkill) state still loading."""

from __future__ import annotations

import json

import pytest

from arena.core.api.errors import ArenaError
from arena.populations.ratings import (
    Rating,
    Ratings,
    draw_margin,
    elo_expected,
    elo_update,
    elo_update_many,
    make_model,
    ranks_of,
)
from arena.populations.settings import RatingsConfig

STILL = RatingsConfig(tau=0.0)  # no dynamics: the figures below are exact


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


def test_elo_of_many_players_is_pairwise_with_a_shared_step():
    # Three newcomers, places 1, 2, 3: step 32/2 = 16 per pair; a +8 +8, b −8 +8, c −8 −8.
    assert elo_update_many([1000, 1000, 1000], [1.0, 0.0, -1.0], 32) == [1016.0, 1000.0, 984.0]
    # Two players: the same as elo_update.
    assert elo_update_many([1200, 1000], [0.5, 0.5], 32) == pytest.approx(list(elo_update(1200, 1000, 0.5, 32)))


def test_openskill_readme_example():
    # openskill.py's README: a1 = Rating(), a2 = (32.444, 5.123) beat b1 = (43.381, 2.421), b2 = (25.188, 6.211)
    # -> (28.669648436582808, 8.071520788025197), (33.83086971107981, 5.062772998705765),
    #    (43.071274808241974, 2.4166900452721256), (23.149503312339064, 6.1378606973362135).
    # Those figures predate the library's default tau: with tau 0 our config builds the model that gives them.
    model = make_model(STILL)
    a1, a2 = model.rating(), model.rating(mu=32.444, sigma=5.123)
    b1, b2 = model.rating(mu=43.381, sigma=2.421), model.rating(mu=25.188, sigma=6.211)
    [[x1, x2], [y1, y2]] = model.rate([[a1, a2], [b1, b2]])
    got = [(r.mu, r.sigma) for r in (x1, x2, y1, y2)]
    documented = [
        (28.669648436582808, 8.071520788025197),
        (33.83086971107981, 5.062772998705765),
        (43.071274808241974, 2.4166900452721256),
        (23.149503312339064, 6.1378606973362135),
    ]
    for (mu, sigma), (doc_mu, doc_sigma) in zip(got, documented, strict=True):
        assert mu == pytest.approx(doc_mu, abs=1e-9) and sigma == pytest.approx(doc_sigma, abs=1e-9)
    # README: ordinal(mu=43.07, sigma=2.42) -> 35.81 (mu - 3 sigma), our ``conservative``.
    assert Rating(elo=1000.0, mu=43.07, sigma=2.42).conservative == pytest.approx(35.81)


def test_two_newcomers_by_hand():
    # Weng & Lin (2011) Algorithm 4 (Plackett-Luce), beta 25/6, no dynamics: c² = 2·(σ² + β²) = 173.6111,
    # c = 13.17616; p = 1/2 each; Ω = ±σ²/c·(1 − p) = ±69.4444/13.17616·0.5 = ±2.635231; γ = σ/c = 0.632456,
    # δ = γ·σ²/c²·p(1 − p) = 0.632456·0.4·0.25 = 0.0632456, σ² ← 69.4444·(1 − δ) = 65.0522, σ = 8.065506.
    r = Ratings(STILL)
    r.record("a", "b", 1.0)
    a, b = r.rating("a"), r.rating("b")
    assert (a.mu, b.mu) == (pytest.approx(27.635231, abs=1e-5), pytest.approx(22.364769, abs=1e-5))
    assert a.sigma == pytest.approx(8.065506, abs=1e-5) and b.sigma == pytest.approx(a.sigma)
    assert (a.elo, b.elo) == (1016.0, 984.0)
    # A draw between newcomers moves no mean and shrinks both sigmas alike.
    r.record("c", "d", 0.5)
    c, d = r.rating("c"), r.rating("d")
    assert c.mu == pytest.approx(25.0) and d.mu == pytest.approx(25.0)
    assert c.sigma == pytest.approx(d.sigma) and c.sigma < 25 / 3


def test_three_player_game_by_hand():
    # Three newcomers, places 1, 2, 3, no dynamics: c² = 3·(σ² + β²) = 260.4167, c = 16.13743; every
    # exp(μ/c) is equal, so p(i | players placed at or below q) = 1/(number of them):
    # σ²/c = 4.303315; Ω_a = σ²/c·(1 − 1/3) = 2.868877; Ω_b = σ²/c·(−1/3 + 1 − 1/2) = 0.717219;
    # Ω_c = σ²/c·(−1/3 − 1/2) = −3.586096.
    # δ_a = γσ²/c²·(2/9) = 0.516398·0.266667·0.222222 = 0.0306013 → σ_a = 8.204837;
    # δ_b = δ_c = 0.516398·0.266667·(2/9 + 1/4) = 0.0650279 → σ = 8.057830 (c's own term p(1 − p) is 0).
    r = Ratings(STILL)
    r.record_match(["a", "b", "c"], [1.0, 0.0, -1.0])
    a, b, c = (r.rating(n) for n in "abc")
    assert a.mu == pytest.approx(27.868877, abs=1e-5)
    assert b.mu == pytest.approx(25.717219, abs=1e-5)
    assert c.mu == pytest.approx(21.413904, abs=1e-5)
    assert a.sigma == pytest.approx(8.204837, abs=1e-5)
    assert b.sigma == pytest.approx(8.057830, abs=1e-5) and c.sigma == pytest.approx(b.sigma)
    assert [a.elo, b.elo, c.elo] == [1016.0, 1000.0, 984.0]
    rows = {row["name"]: (row["games"], row["wins"], row["draws"], row["losses"]) for row in r.table()}
    assert rows == {"a": (1, 1, 0, 0), "b": (1, 0, 0, 1), "c": (1, 0, 0, 1)}
    # A shared first place is a draw for both; equal scores get equal ratings.
    r.record_match(["x", "y", "z"], [2.0, 2.0, -4.0])
    x, y = r.rating("x"), r.rating("y")
    assert x == y and x.mu > 25 > r.rating("z").mu
    assert {row["name"]: row["draws"] for row in r.table()}["x"] == 1


def test_ranks_and_models():
    assert ranks_of([3.0, -1.0, 3.0, 0.0]) == [0, 3, 0, 2]
    for name in ("plackett_luce", "thurstone_mosteller_full", "thurstone_mosteller_part", "bradley_terry_full"):
        r = Ratings(RatingsConfig(model=name))  # type: ignore[arg-type]
        r.record_match(["a", "b", "c"], [1.0, 0.0, -1.0])
        assert r.rating("a").mu > r.rating("b").mu > r.rating("c").mu, name
    # Thurstone-Mosteller takes its draw margin from draw_probability, TrueSkill's way: ε = Φ⁻¹(0.55)·√2·β.
    assert draw_margin(0.10, 25 / 6) == pytest.approx(0.740467, abs=1e-6)
    assert make_model(RatingsConfig(model="thurstone_mosteller_full")).epsilon == pytest.approx(0.740467, abs=1e-6)


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
    r.record_match(["a", "b", "snap"], [0.0, 1.0, 0.5])
    state = json.loads(json.dumps(r.state_dict()))
    assert state["version"] == 2 and state["system"] == "openskill" and state["model"] == "plackett_luce"
    again = Ratings(RatingsConfig(elo_k=16))
    again.load_state_dict(state)
    assert again.table() == r.table()
    r.record("b", "snap", 1.0)
    again.record("b", "snap", 1.0)
    assert again.table() == r.table()


def test_version_1_state_migrates():
    # What arena-rl 0.1.0 wrote (hand-written TrueSkill): the same player rows under version 1.
    old = {
        "version": 1,
        "players": [
            {"name": "agent", "elo": 1016.0, "mu": 29.396, "sigma": 7.171, "games": 1, "wins": 1, "draws": 0,
             "losses": 0},
            {"name": "random", "elo": 984.0, "mu": 20.604, "sigma": 7.171, "games": 1, "wins": 0, "draws": 0,
             "losses": 1},
        ],
    }  # fmt: skip
    r = Ratings()
    r.load_state_dict(json.loads(json.dumps(old)))
    assert r.rating("agent") == Rating(elo=1016.0, mu=29.396, sigma=7.171)
    assert [row["name"] for row in r.table()] == ["agent", "random"]
    r.record("agent", "random", 1.0)
    assert r.rating("agent").mu > 29.396 and r.state_dict()["version"] == 2
    with pytest.raises(ArenaError, match=r"version 7.*1: hand-written two-player TrueSkill.*2: openskill"):
        Ratings().load_state_dict({"version": 7, "players": []})


def test_ratings_reject_bad_games():
    r = Ratings()
    with pytest.raises(ArenaError, match=r"0\.5 \(draw\)"):
        r.record("a", "b", 0.7)
    with pytest.raises(ArenaError, match="itself"):
        r.record("a", "a", 1.0)
    with pytest.raises(ArenaError, match="itself"):
        r.record_match(["a", "b", "a"], [1.0, 0.0, 0.5])
    with pytest.raises(ArenaError, match="two players"):
        r.record_match(["a"], [1.0])
    with pytest.raises(ArenaError, match="finite"):
        r.record_match(["a", "b"], [1.0, float("nan")])
    r.add("a")
    with pytest.raises(ArenaError, match="already rated"):
        r.add("a")
    with pytest.raises(ArenaError):
        r.load_state_dict({"players": []})
