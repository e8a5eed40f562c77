"""The population: learners, the opponent pool they train against, matchmaking, snapshots and ratings.

``Population`` is what the trainer talks to; the pieces (``OpponentPool``, ``default_matchups``, ``Ratings``)
are usable on their own. Nothing here needs torch.
"""

from arena.populations.manager import Population, snapshot_name
from arena.populations.matchmaking import Matchup, default_matchups, seated
from arena.populations.pool import MatchStats, OpponentPool, PoolMember, pfsp_priority
from arena.populations.ratings import Rating, Ratings, elo_update, elo_update_many
from arena.populations.settings import PFSPConfig, PopulationConfig, RatingsConfig

__all__ = [
    "MatchStats",
    "Matchup",
    "OpponentPool",
    "PFSPConfig",
    "PoolMember",
    "Population",
    "PopulationConfig",
    "Rating",
    "Ratings",
    "RatingsConfig",
    "default_matchups",
    "elo_update",
    "elo_update_many",
    "pfsp_priority",
    "seated",
    "snapshot_name",
]
