"""Elo and a Weng-Lin Bayesian rating (``openskill``) over a population, for two players or many.

Elo: E_a = 1 / (1 + 10^((R_b − R_a)/400)); R_a += k·(S_a − E_a), R_b −= k·(S_a − E_a), S_a ∈ {1, ½, 0}. A game
of n > 2 players is scored as the n(n−1)/2 pairwise games it implies (the better-placed player of each pair won,
equal places drew), each with step k/(n−1), so every player moves by at most k per game as in the two-player case.

The Bayesian rating is ``openskill``'s (Weng and Lin 2011, "A Bayesian Approximation Method for Online
Ranking"): every player has a Gaussian skill belief (μ, σ) on TrueSkill's scale (a newcomer is 25 ± 25/3), and a
game updates the beliefs from the players' ranking, so free-for-all games of any size (three-player Kuhn
poker) are rated as one ranked match. ``RatingsConfig.model`` picks the library's model (default
``plackett_luce``, the library's default); ``thurstone_mosteller_*`` are the closest to TrueSkill and take the
draw margin from ``draw_probability``. The leaderboard number is ``ordinal()``, μ − 3σ (``conservative``).

``Ratings.state_dict()`` (JSON) is ``{"version": 2, "system": "openskill", "model", "players": [{"name", "elo",
"mu", "sigma", "games", "wins", "draws", "losses"}, ...]}`` with players in the order they joined. A version-1
state (arena-rl 0.1.0's hand-written two-player TrueSkill) loads as it is: its μ and σ are the same kind of
Gaussian belief on the same scale, so they carry over and the next games update them with openskill.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Any

import attrs
from openskill.models import (
    BradleyTerryFull,
    BradleyTerryPart,
    PlackettLuce,
    ThurstoneMostellerFull,
    ThurstoneMostellerPart,
)

from arena.core.api.errors import ArenaError
from arena.populations.settings import RatingsConfig

#: ``RatingsConfig.model`` → the openskill model class.
MODELS: dict[str, Any] = {
    "plackett_luce": PlackettLuce,
    "thurstone_mosteller_full": ThurstoneMostellerFull,
    "thurstone_mosteller_part": ThurstoneMostellerPart,
    "bradley_terry_full": BradleyTerryFull,
    "bradley_terry_part": BradleyTerryPart,
}

STATE_VERSION = 2
#: What each ratings-state version holds (the message when a state is of none of them names these).
STATE_VERSIONS = {1: "hand-written two-player TrueSkill (arena-rl 0.1.0)", 2: "openskill"}


# -- Elo ----------------------------------------------------------------------------------------------------------


def elo_expected(rating_a: float, rating_b: float) -> float:
    """a's expected score against b."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float) -> tuple[float, float]:
    """Both ratings after a game in which a scored ``score_a`` (1 win, ½ draw, 0 loss)."""
    delta = k * (score_a - elo_expected(rating_a, rating_b))
    return rating_a + delta, rating_b - delta


def elo_update_many(ratings: Sequence[float], scores: Sequence[float], k: float) -> list[float]:
    """Every player's Elo after one game of n players with results ``scores`` (higher is better): the sum of the
    pairwise updates, each with step k/(n−1), all computed from the ratings before the game."""
    n = len(ratings)
    if n < 2:
        raise ArenaError("a rated game needs at least two players")
    step = k / (n - 1)
    deltas = [0.0] * n
    for i in range(n):
        for j in range(i + 1, n):
            s = 1.0 if scores[i] > scores[j] else 0.5 if scores[i] == scores[j] else 0.0
            d = step * (s - elo_expected(ratings[i], ratings[j]))
            deltas[i] += d
            deltas[j] -= d
    return [r + d for r, d in zip(ratings, deltas, strict=True)]


# -- openskill ----------------------------------------------------------------------------------------------------


def draw_margin(draw_probability: float, beta: float, players: int = 2) -> float:
    """ε such that two equal players draw with ``draw_probability``: Φ⁻¹((p + 1)/2)·√players·β (TrueSkill's
    relation; the Thurstone-Mosteller models take it as their ``epsilon``)."""
    return NormalDist().inv_cdf((draw_probability + 1.0) / 2.0) * math.sqrt(players) * beta


def make_model(config: RatingsConfig) -> Any:
    """The openskill model ``config`` describes."""
    cls = MODELS[config.model]
    kwargs: dict[str, Any] = {"mu": config.mu, "sigma": config.sigma, "beta": config.beta, "tau": config.tau}
    if config.model.startswith("thurstone_mosteller"):
        kwargs["epsilon"] = draw_margin(config.draw_probability, config.beta)
    return cls(**kwargs)


def ranks_of(scores: Sequence[float]) -> list[int]:
    """Competition ranks, 0 the best: higher scores place better, equal scores share a place (a draw)."""
    return [sum(1 for other in scores if other > s) for s in scores]


@attrs.frozen
class Rating:
    """One player's ratings: Elo, and openskill's mean skill ``mu`` and uncertainty ``sigma``."""

    elo: float
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """μ − 3σ (openskill's ``ordinal()``): a skill the player exceeds with about 99.9% belief."""
        return self.mu - 3.0 * self.sigma


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
    """Elo and openskill ratings of named players, with their game records.

    Players join on ``add`` or on their first game (at the configured initial ratings). A game updates both
    systems at once from the same result. In a game of more than two players a player's record counts a win
    for sole first place, a draw for a shared first place and a loss otherwise.
    """

    def __init__(self, config: RatingsConfig | None = None) -> None:
        self.config = config or RatingsConfig()
        self.model = make_model(self.config)
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
        self.record_match([a, b], [score_a, 1.0 - score_a])

    def record_match(self, players: Sequence[str], scores: Sequence[float]) -> None:
        """One game of two or more distinct players; ``scores[i]`` is player i's result, higher is better
        (returns, or 1/½/0), equal scores share a place. Elo and openskill both update from the ranking."""
        if len(players) != len(scores):
            raise ArenaError(f"{len(players)} players but {len(scores)} scores")
        if len(players) < 2:
            raise ArenaError("a rated game needs at least two players")
        if len(set(players)) != len(players):
            raise ArenaError(f"a player cannot be rated against itself: {list(players)}")
        if not all(math.isfinite(s) for s in scores):
            raise ArenaError(f"game scores must be finite, got {list(scores)}")
        for name in players:
            if name not in self._players:
                self.add(name)
        ps = [self._players[name] for name in players]
        ranks = ranks_of(scores)
        for p, elo in zip(ps, elo_update_many([p.elo for p in ps], scores, self.config.elo_k), strict=True):
            p.elo = elo
        teams = [[self.model.rating(mu=p.mu, sigma=p.sigma)] for p in ps]
        rated = self.model.rate(teams, ranks=[float(r) for r in ranks])
        for p, (new,) in zip(ps, rated, strict=True):
            p.mu, p.sigma = float(new.mu), float(new.sigma)
        firsts = ranks.count(0)
        for p, rank in zip(ps, ranks, strict=True):
            p.games += 1
            count_result(p, 0.0 if rank else 1.0 if firsts == 1 else 0.5)

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
        return {
            "version": STATE_VERSION,
            "system": "openskill",
            "model": self.config.model,
            "players": [attrs.asdict(p) for p in self._players.values()],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Replace every player by those in ``state`` (as written by ``state_dict``, or a version-1 state)."""
        version = state.get("version") if isinstance(state, dict) else None
        if version not in STATE_VERSIONS:
            known = "; ".join(f"{v}: {what}" for v, what in STATE_VERSIONS.items())
            raise ArenaError(f"ratings state has version {version!r}, which this arena cannot read (it reads {known})")
        players = state.get("players")
        if not isinstance(players, list):
            raise ArenaError(f"version-{version} ratings state has no list of players")
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
