"""Elo and two-player TrueSkill over a population, written out so the numbers can be checked by hand.

Elo: E_a = 1 / (1 + 10^((R_b − R_a)/400)); R_a += k·(S_a − E_a), R_b −= k·(S_a − E_a), S_a ∈ {1, ½, 0}.

TrueSkill (Herbrich, Minka and Graepel 2006, the exact two-player case): before a game each σ² gets τ² added
(dynamics); c² = 2β² + σ_a² + σ_b²; the draw margin is ε = Φ⁻¹((p_draw + 1)/2)·√2·β. With d = +1 when a won
or drew and −1 when a lost, t = d·(μ_a − μ_b)/c and e = ε/c:

- decisive game: v(t) = φ(t − e)/Φ(t − e), w(t) = v·(v + t − e);
- draw: v(t) = (φ(−e − t) − φ(e − t)) / (Φ(e − t) − Φ(−e − t)),
  w(t) = v² + ((e − t)·φ(e − t) + (e + t)·φ(e + t)) / (Φ(e − t) − Φ(−e − t));
- μ_a += d·σ_a²/c·v, μ_b −= d·σ_b²/c·v, σ_i² ← σ_i²·(1 − σ_i²/c²·w).

With the defaults (μ 25, σ 25/3, β 25/6, τ 25/300, p_draw 0.1) a first game between newcomers gives the winner
29.396 ± 7.171 and the loser 20.604 ± 7.171, a draw 25.000 ± 6.458 each: the numbers the ``trueskill`` package
documents.

``Ratings.state_dict()`` (JSON) is ``{"version": 1, "players": [{"name", "elo", "mu", "sigma", "games", "wins",
"draws", "losses"}, ...]}`` with players in the order they joined.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Any

import attrs

from arena.core.errors import ArenaError
from arena.populations.settings import RatingsConfig

_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
# Below this the normal tail underflows; v and w switch to their asymptotic series there.
_TAIL = -30.0


def normal_pdf(x: float) -> float:
    return _INV_SQRT_2PI * math.exp(-0.5 * x * x)


def normal_cdf(x: float) -> float:
    # erfc keeps full relative precision in the lower tail, where 0.5·(1 + erf) would cancel to 0.
    return 0.5 * math.erfc(-x / _SQRT2)


# -- Elo ----------------------------------------------------------------------------------------------------------


def elo_expected(rating_a: float, rating_b: float) -> float:
    """a's expected score against b."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float) -> tuple[float, float]:
    """Both ratings after a game in which a scored ``score_a`` (1 win, ½ draw, 0 loss)."""
    delta = k * (score_a - elo_expected(rating_a, rating_b))
    return rating_a + delta, rating_b - delta


# -- TrueSkill ----------------------------------------------------------------------------------------------------


def draw_margin(draw_probability: float, beta: float, players: int = 2) -> float:
    """ε such that two equal players draw with ``draw_probability``: Φ⁻¹((p + 1)/2)·√players·β."""
    return NormalDist().inv_cdf((draw_probability + 1.0) / 2.0) * math.sqrt(players) * beta


def v_win(t: float, e: float) -> float:
    """Mean correction of a decisive game; ``t`` the winner's lead over c, ``e`` the draw margin over c."""
    x = t - e
    if x < _TAIL:  # Mills ratio series: φ(x)/Φ(x) = −x − 1/x + 2/x³ + …
        return -x - 1.0 / x + 2.0 / x**3
    return normal_pdf(x) / normal_cdf(x)


def w_win(t: float, e: float) -> float:
    """Variance correction of a decisive game, in (0, 1)."""
    x = t - e
    if x < _TAIL:
        return 1.0 - 1.0 / (x * x)
    v = v_win(t, e)
    return v * (v + x)


def v_draw(t: float, e: float) -> float:
    """Mean correction of a draw; ``t`` = (μ_a − μ_b)/c, negative when a was the stronger."""
    s = abs(t)  # computed for |t| and signed back: the formula is odd in t, and this form is the stable one
    a, b = e - s, -e - s
    denom = normal_cdf(a) - normal_cdf(b)
    v = (normal_pdf(b) - normal_pdf(a)) / denom if denom > 0 else a
    return v if t >= 0 else -v


def w_draw(t: float, e: float) -> float:
    """Variance correction of a draw, in (0, 1)."""
    s = abs(t)
    a, b = e - s, -e - s
    denom = normal_cdf(a) - normal_cdf(b)
    if denom <= 0:  # both ends far in the tail: the truncated Gaussian has almost no variance left
        return 1.0
    v = v_draw(s, e)
    return v * v + (a * normal_pdf(a) - b * normal_pdf(b)) / denom


@attrs.frozen
class Rating:
    """One player's ratings: Elo, and TrueSkill's mean ``mu`` and uncertainty ``sigma``."""

    elo: float
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """μ − 3σ: a skill the player exceeds with about 99.9% belief (TrueSkill's leaderboard number)."""
        return self.mu - 3.0 * self.sigma


def trueskill_update(
    a: tuple[float, float],
    b: tuple[float, float],
    score_a: float,
    beta: float,
    tau: float,
    draw_probability: float,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """``((mu_a, sigma_a), (mu_b, sigma_b))`` after a game in which a scored ``score_a`` (1, ½ or 0)."""
    (mu_a, sigma_a), (mu_b, sigma_b) = a, b
    var_a = sigma_a * sigma_a + tau * tau
    var_b = sigma_b * sigma_b + tau * tau
    c2 = 2.0 * beta * beta + var_a + var_b
    c = math.sqrt(c2)
    e = draw_margin(draw_probability, beta) / c
    d = -1.0 if score_a == 0.0 else 1.0
    t = d * (mu_a - mu_b) / c
    if score_a == 0.5:
        v, w = v_draw(t, e), w_draw(t, e)
    else:
        v, w = v_win(t, e), w_win(t, e)
    new_a = (mu_a + d * var_a / c * v, math.sqrt(var_a * (1.0 - var_a / c2 * w)))
    new_b = (mu_b - d * var_b / c * v, math.sqrt(var_b * (1.0 - var_b / c2 * w)))
    return new_a, new_b


# -- the table ----------------------------------------------------------------------------------------------------


def count_result(record: Any, score: float) -> None:
    """Add one game to ``record``'s ``wins``/``draws``/``losses``: ``score`` 1 win, 0.5 draw, 0 loss."""
    if score == 1.0:
        record.wins += 1
    elif score == 0.5:
        record.draws += 1
    elif score == 0.0:
        record.losses += 1
    else:
        raise ArenaError(f"a game score must be 1 (win), 0.5 (draw) or 0 (loss), got {score!r}")


@attrs.define
class _Player:
    name: str
    elo: float
    mu: float
    sigma: float
    games: int = 0
    wins: int = 0
    draws: int = 0
    losses: int = 0


_PLAYER_KEYS = ("name", "elo", "mu", "sigma", "games", "wins", "draws", "losses")


class Ratings:
    """Elo and TrueSkill ratings of named players, with their game records.

    Players join on ``add`` or on their first ``record`` (at the configured initial ratings). A game updates
    both systems at once from the same result.
    """

    def __init__(self, config: RatingsConfig | None = None) -> None:
        self.config = config or RatingsConfig()
        self._players: dict[str, _Player] = {}

    def __contains__(self, name: object) -> bool:
        return name in self._players

    def __len__(self) -> int:
        return len(self._players)

    @property
    def names(self) -> list[str]:
        return list(self._players)

    def initial(self) -> Rating:
        return Rating(elo=self.config.elo_initial, mu=self.config.mu, sigma=self.config.sigma)

    def add(self, name: str, rating: Rating | None = None) -> None:
        """Add ``name`` at ``rating`` (default: the initial ratings); re-adding a player is an error."""
        if name in self._players:
            raise ArenaError(f"player {name!r} is already rated")
        r = rating or self.initial()
        self._players[name] = _Player(name=name, elo=r.elo, mu=r.mu, sigma=r.sigma)

    def rating(self, name: str) -> Rating:
        """``name``'s current ratings (the initial ones for a player not seen yet)."""
        p = self._players.get(name)
        return self.initial() if p is None else Rating(elo=p.elo, mu=p.mu, sigma=p.sigma)

    def record(self, a: str, b: str, score_a: float) -> None:
        """One game between ``a`` and ``b``; ``score_a`` is a's result: 1 win, 0.5 draw, 0 loss."""
        if score_a not in (0.0, 0.5, 1.0):
            raise ArenaError(f"a game score must be 1 (win), 0.5 (draw) or 0 (loss), got {score_a!r}")
        if a == b:
            raise ArenaError(f"player {a!r} cannot be rated against itself")
        for name in (a, b):
            if name not in self._players:
                self.add(name)
        pa, pb = self._players[a], self._players[b]
        cfg = self.config
        pa.elo, pb.elo = elo_update(pa.elo, pb.elo, score_a, cfg.elo_k)
        (pa.mu, pa.sigma), (pb.mu, pb.sigma) = trueskill_update(
            (pa.mu, pa.sigma), (pb.mu, pb.sigma), score_a, cfg.beta, cfg.tau, cfg.draw_probability
        )
        for p, score in ((pa, score_a), (pb, 1.0 - score_a)):
            p.games += 1
            count_result(p, score)

    def table(self) -> list[dict[str, Any]]:
        """One row per player, best conservative rating (μ − 3σ) first; ties keep the joining order."""
        rows: list[dict[str, Any]] = [
            {
                "name": p.name,
                "elo": p.elo,
                "mu": p.mu,
                "sigma": p.sigma,
                "conservative": p.mu - 3.0 * p.sigma,
                "games": p.games,
                "wins": p.wins,
                "draws": p.draws,
                "losses": p.losses,
            }
            for p in self._players.values()
        ]
        rows.sort(key=lambda r: -r["conservative"])  # stable: equal ratings stay in joining order
        return rows

    def state_dict(self) -> dict[str, Any]:
        return {"version": 1, "players": [attrs.asdict(p) for p in self._players.values()]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace every player by those in ``state`` (as written by ``state_dict``)."""
        players = state.get("players") if isinstance(state, dict) else None
        if not isinstance(players, list) or state.get("version") != 1:
            raise ArenaError("ratings state is not a version-1 ratings table")
        loaded: dict[str, _Player] = {}
        for row in players:
            if not isinstance(row, dict) or set(row) != set(_PLAYER_KEYS):
                raise ArenaError(f"ratings state has a malformed player row: {row!r}")
            loaded[str(row["name"])] = _Player(
                name=str(row["name"]),
                elo=float(row["elo"]),
                mu=float(row["mu"]),
                sigma=float(row["sigma"]),
                games=int(row["games"]),
                wins=int(row["wins"]),
                draws=int(row["draws"]),
                losses=int(row["losses"]),
            )
        self._players = loaded
