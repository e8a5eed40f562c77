"""Exact ceilings of the meta-RL testbeds, per episode of a trial (issue 24).

A trial is N episodes against one opponent drawn from a pool, every episode restarted from the trial's seed. The
opponent's *type* (its style; in Kuhn poker also the deal and the learner's seat; in ``doors`` the prize's door) is
fixed for the trial and hidden from the learner, which sees only its own observations. Three ceilings follow, each
computed by expectimax over the type posterior and the opponents' own randomness (nothing is sampled):

* ``fixed``: the best policy that does not use earlier episodes (a function of the episode's own history, the same
  in every episode) against the weighted pool. The same in every episode.
* ``adaptive``: ``adaptive[k]`` is the best value any policy can reach in episode k when it may use episodes
  1..k-1 of the trial, spending them on information if that pays: ``C_1(b) = fixed`` and
  ``C_k(b) = max over episode policies of E[C_{k-1}(posterior after the episode)]``. Episode 1 is the fixed
  ceiling; it is an upper bound per episode (reaching ``adaptive[3]`` may cost episode 1 and 2).
* ``informed``: the best policy that knows the type (Kuhn: the opponent's style, not its card), averaged over
  the pool; Kuhn adds ``card_aware`` (style and the opponent's card known).

Win rate is the engine's (``arena.core.rollout.engine.episode_outcomes``): a win is a return above the other seat's, so
in these two-player zero-sum games a positive return, and in ``doors`` opening the prize's door. ``metric`` is
``"win_rate"`` or ``"return"`` (chips in Kuhn poker, the score in rock-paper-scissors).

API::

    ceilings(arena_id, arena_kwargs, opponents, weights=None, episodes=3, unseen=(), metric=None) -> dict

returns ``{"arena", "metric", "episodes", "opponents", "weights", "fixed": [..], "adaptive": [..],
"informed": [..], "per_opponent": {spec: {"fixed_low", "fixed_high", "informed"}}, ...}``: per-episode lists of
length ``episodes``; ``per_opponent`` covers the pool and every ``unseen`` spec: ``fixed_low``/``fixed_high`` is
the value against that opponent of the pool's best fixed policies (several may tie; the range over them),
``informed`` the best response to it. With ``unseen``, ``adaptive_all`` is the adaptive ceiling against the uniform
mix of the pool and the unseen opponents (issue 24's "1.0 from episode 2 on, against all three"). Kuhn poker adds
``card_aware``. Arenas or opponents without a model raise ``NoCeiling``; ``supported(arena_id, opponents)`` asks
first. ``register_model(arena_id, builder)`` adds an arena: ``builder(arena_kwargs, opponents, metric)`` returns a
``TrialModel``.

Pure Python and numpy: the Kuhn styles come from ``arena.arenas.opponents.kuhn`` (which imports pyspiel) only when
a Kuhn ceiling is asked for; the tests cross-check every number against pyspiel or a brute-force walk.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from arena.core.api.errors import ArenaError

__all__ = [
    "DoorsModel",
    "KuhnModel",
    "NoCeiling",
    "RpsModel",
    "TrialModel",
    "VaultModel",
    "adaptive_values",
    "best_value",
    "ceilings",
    "fixed_transfer",
    "informed_value",
    "model_for",
    "register_model",
    "supported",
]

Node = Any
Branches = Sequence[tuple[float, Node]]
#: A leaf value: (terminal node, unnormalised type weights there) -> value weighted by those weights.
Leaf = Callable[[Node, Sequence[float]], float]

_TIE = 1e-12


class NoCeiling(ArenaError):
    """No ceiling model for this arena or opponent (a learned or unknown opponent, an arena without a model)."""


class TrialModel(Protocol):
    """One episode as a tree the learner walks, conditioned on a hidden type fixed for the trial.

    Nodes are exactly what the learner has observed so far in the episode (so two types that lead to the same node
    are indistinguishable there); ``start`` and ``step`` return ``(probability, node)`` branches given the type.
    ``step`` applies the learner's action and everything that follows until its next decision or the end; a
    terminal node's ``value`` is the learner's (win indicator or return) and must follow from the node alone.
    """

    metric: str
    types: tuple[Any, ...]

    def start(self, kind: Any) -> Branches: ...

    def actions(self, node: Node) -> Sequence[int]: ...

    def step(self, node: Node, action: int, kind: Any) -> Branches: ...

    def terminal(self, node: Node) -> bool: ...

    def value(self, node: Node) -> float: ...


# -- the solver --------------------------------------------------------------------------------------------------


def _split(
    model: TrialModel, weights: Sequence[Sequence[float]], branch: Callable[[Any], Branches]
) -> dict[Node, list[list[float]]]:
    """Each reachable node with the weight vectors (prior x likelihood) carried into it, one per input vector."""
    n = len(model.types)
    out: dict[Node, list[list[float]]] = {}
    for i, kind in enumerate(model.types):
        if all(w[i] == 0 for w in weights):
            continue
        for p, node in branch(kind):
            if p == 0:
                continue
            slot = out.setdefault(node, [[0.0] * n for _ in weights])
            for j, w in enumerate(weights):
                slot[j][i] += w[i] * p
    return out


def _stepper(model: TrialModel, node: Node, action: int, kind: Any) -> Branches:
    return model.step(node, action, kind)


def _value(model: TrialModel, node: Node, w: Sequence[float], leaf: Leaf) -> float:
    if model.terminal(node):
        return leaf(node, w)
    best = -math.inf
    for action in model.actions(node):
        children = _split(model, [w], functools.partial(_stepper, model, node, action))
        best = max(best, sum(_value(model, child, cw[0], leaf) for child, cw in children.items()))
    return best


def episode_value(model: TrialModel, weights: Sequence[float], leaf: Leaf) -> float:
    """Expectimax of one episode: the learner maximises at its nodes, the leaves are valued by ``leaf``."""
    return sum(_value(model, node, w[0], leaf) for node, w in _split(model, [weights], model.start).items())


def _payoff(model: TrialModel) -> Leaf:
    return lambda node, w: sum(w) * model.value(node)


def best_value(model: TrialModel, weights: Sequence[float]) -> float:
    """The best episode value against the type mix ``weights`` (normalised here): the fixed ceiling."""
    total = sum(weights)
    return episode_value(model, [x / total for x in weights], _payoff(model))


def adaptive_values(model: TrialModel, weights: Sequence[float], episodes: int) -> list[float]:
    """``[C_1, ..., C_episodes]`` of the module docstring for the prior ``weights``."""
    memo: dict[tuple[int, tuple[float, ...]], float] = {}

    def ceiling(k: int, w: Sequence[float]) -> float:
        total = sum(w)
        if total <= 0:
            return 0.0
        normal = [x / total for x in w]
        key = (k, tuple(round(x, 12) for x in normal))
        if key not in memo:
            if k == 1:
                memo[key] = episode_value(model, normal, _payoff(model))
            else:
                memo[key] = episode_value(model, normal, lambda node, w2: ceiling(k - 1, w2))
        return total * memo[key]

    total = sum(weights)
    prior = [x / total for x in weights]
    return [ceiling(k, prior) for k in range(1, episodes + 1)]


def informed_value(model: TrialModel, weights: Sequence[float], key: Callable[[Any], Hashable]) -> float:
    """The best value of a policy told ``key(type)`` before the episode, averaged over the prior ``weights``."""
    total = sum(weights)
    groups: dict[Hashable, list[float]] = {}
    for i, kind in enumerate(model.types):
        groups.setdefault(key(kind), [0.0] * len(model.types))[i] = weights[i] / total
    return sum(episode_value(model, w, _payoff(model)) for w in groups.values() if sum(w) > 0)


def fixed_transfer(model: TrialModel, pool: Sequence[float], other: Sequence[float]) -> tuple[float, float]:
    """(lowest, highest) value against the type mix ``other`` of the policies that are best against ``pool``.

    A policy is best against the pool iff it picks a pool-best action at every node the pool reaches; elsewhere it
    may do anything, so the range runs over those choices (they are independent across nodes).
    """
    pool_total, other_total = sum(pool), sum(other)
    p = [x / pool_total for x in pool]
    o = [x / other_total for x in other]
    payoff = _payoff(model)

    def walk(node: Node, wp: Sequence[float], wo: Sequence[float]) -> tuple[float, float]:
        if model.terminal(node):
            v = sum(wo) * model.value(node)
            return v, v
        options = []
        for action in model.actions(node):
            children = _split(model, [wp, wo], functools.partial(_stepper, model, node, action))
            pool_value = sum(_value(model, child, cw[0], payoff) for child, cw in children.items())
            ranges = [walk(child, cw[0], cw[1]) for child, cw in children.items()]
            options.append((pool_value, sum(r[0] for r in ranges), sum(r[1] for r in ranges)))
        best = max(v for v, _, _ in options)
        allowed = [o for o in options if sum(wp) <= 0 or o[0] >= best - _TIE * (1 + abs(best))]
        return min(lo for _, lo, _ in allowed), max(hi for _, _, hi in allowed)

    lows, highs = 0.0, 0.0
    for node, (wp, wo) in _split(model, [p, o], model.start).items():
        lo, hi = walk(node, wp, wo)
        lows, highs = lows + lo, highs + hi
    return lows, highs


# -- rock-paper-scissors -----------------------------------------------------------------------------------------


def _rps_round(mine: int, theirs: int) -> int:
    return [0, -1, 1][(theirs - mine) % 3]


class RpsModel:
    """``rounds`` rounds against an RPS opponent of the pool; the type is the opponent (its randomness is in the
    transitions, fresh every episode, as each opponent's generator runs on through a trial)."""

    def __init__(self, opponents: Sequence[str], rounds: int = 5, metric: str = "win_rate") -> None:
        from arena.arenas.opponents.simple import RPS_OPPONENTS

        self.metric = _check_metric(metric)
        self.rounds = int(rounds)
        self.types: tuple[Any, ...] = tuple(opponents)
        self._probs: dict[tuple[Any, Node], np.ndarray] = {}
        self._players: dict[str, Any] = {}
        for name in self.types:
            if name == "random":
                self._players[name] = None
            elif name in RPS_OPPONENTS:
                self._players[name] = RPS_OPPONENTS[name](name, 0)
            else:
                raise NoCeiling(f"no ceiling model for opponent {name!r} in rock_paper_scissors")

    def start(self, kind: Any) -> Branches:
        return [(1.0, ())]

    def actions(self, node: Node) -> Sequence[int]:
        return (0, 1, 2)

    def opponent_probs(self, kind: Any, node: Node) -> np.ndarray:
        key = (kind, node)
        if key not in self._probs:
            player = self._players[str(kind)]
            history = np.array([(theirs, mine) for mine, theirs in node], dtype=int).reshape(-1, 2)
            self._probs[key] = np.full(3, 1 / 3) if player is None else player.move_probs(history)
        return self._probs[key]

    def step(self, node: Node, action: int, kind: Any) -> Branches:
        probs = self.opponent_probs(kind, node)
        return [(float(p), (*node, (action, m))) for m, p in enumerate(probs) if p > 0]

    def terminal(self, node: Node) -> bool:
        return len(node) >= self.rounds

    def value(self, node: Node) -> float:
        score = sum(_rps_round(m, t) for m, t in node)
        return float(score > 0) if self.metric == "win_rate" else float(score)


# -- doors --------------------------------------------------------------------------------------------------------


class DoorsModel:
    """The ``doors`` arena: the type is the prize's door (uniform prior); scout reveals it, a wrong door rules one
    out. Win rate and return coincide (a win scores 1)."""

    def __init__(self, doors: int = 10, metric: str = "win_rate") -> None:
        self.metric = _check_metric(metric)
        self.doors = int(doors)
        self.types: tuple[Any, ...] = tuple(range(1, self.doors + 1))

    def start(self, kind: Any) -> Branches:
        return [(1.0, "closed")]

    def actions(self, node: Node) -> Sequence[int]:
        return tuple(range(self.doors + 1))

    def step(self, node: Node, action: int, kind: Any) -> Branches:
        if action == 0:
            return [(1.0, ("scout", kind))]
        return [(1.0, ("hit", action) if action == kind else ("miss", action))]

    def terminal(self, node: Node) -> bool:
        return node != "closed"

    def value(self, node: Node) -> float:
        return 1.0 if isinstance(node, tuple) and node[0] == "hit" else 0.0


# -- vault --------------------------------------------------------------------------------------------------------


class VaultModel:
    """The ``vault`` arena: the type is the treasure's chest; one action, ``open chest k``, and the episode's end
    names the treasure's chest whether k was right or not, so from episode 2 of a trial the chest is known.

    The prior (``prior``, over chests 1..N) is uniform for a fresh vault; with ``tasks`` P it is the share of vaults
    0..P-1 whose treasure each chest holds (uniform when P is a multiple of N: the treasures are balanced per block
    of N vaults, ``arena.arenas.vault.treasure_chest``). Win rate and return coincide (a win scores 1). The
    across-iteration ceilings of EMPO²'s recurring tasks are in ``arena.arenas.vault`` (``memory_ceiling``)."""

    def __init__(self, chests: int = 16, tasks: int = 0, metric: str = "win_rate") -> None:
        from arena.arenas.vault import treasure_chest

        self.metric = _check_metric(metric)
        self.chests = int(chests)
        self.types: tuple[Any, ...] = tuple(range(1, self.chests + 1))
        counts = [0] * self.chests
        for task in range(int(tasks)):
            counts[treasure_chest(task, self.chests) - 1] += 1
        self.prior: tuple[float, ...] = tuple(float(c) for c in counts) if tasks else (1.0,) * self.chests

    def start(self, kind: Any) -> Branches:
        return [(1.0, "closed")]

    def actions(self, node: Node) -> Sequence[int]:
        return self.types

    def step(self, node: Node, action: int, kind: Any) -> Branches:
        return [(1.0, ("hit", action) if action == kind else ("miss", action, kind))]

    def terminal(self, node: Node) -> bool:
        return node != "closed"

    def value(self, node: Node) -> float:
        return 1.0 if isinstance(node, tuple) and node[0] == "hit" else 0.0


# -- Kuhn poker --------------------------------------------------------------------------------------------------

#: (opponent's card, betting so far as "p"/"b" letters) -> probability that the opponent bets.
KuhnPolicy = Callable[[int, str], float]
_KUHN_TERMINAL = {"pp", "pbp", "pbb", "bp", "bb"}


def kuhn_opponent_policy(name: str) -> KuhnPolicy:
    """A Kuhn opponent as P(Bet | own card, betting): the styles, ``random``, ``cfr`` and ``cfr-argmax``."""
    if name == "random":
        return lambda card, history: 0.5
    if name in ("cfr", "cfr-argmax"):
        from arena.arenas.opponents.cfr import DEFAULT_ITERATIONS, cfr_policy

        table = cfr_policy("kuhn_poker", DEFAULT_ITERATIONS["kuhn_poker"])

        def cfr(card: int, history: str) -> float:
            probs = dict(table[f"{card}{history}"])
            p_bet, p_pass = probs.get(1, 0.0), probs.get(0, 0.0)
            if name == "cfr-argmax":  # the opponent's rule: most likely action, lowest id (Pass) on ties
                return 1.0 if p_bet > p_pass + 1e-12 else 0.0
            return p_bet

        return cfr
    from arena.arenas.opponents.kuhn import KUHN_STOCHASTIC_STYLES, KUHN_STYLES, bet_probability

    if name not in KUHN_STYLES and name not in KUHN_STOCHASTIC_STYLES:
        raise NoCeiling(f"no ceiling model for opponent {name!r} in kuhn_poker")
    prob = bet_probability(name)
    return lambda card, history: prob(card, history.endswith("b"))


def kuhn_payoff(cards: tuple[int, int], history: str) -> float:
    """Player 0's chips at a terminal betting ``history`` with ``cards`` = (player 0's, player 1's)."""
    if history == "bp":
        return 1.0
    if history == "pbp":
        return -1.0
    pot = 1.0 if history == "pp" else 2.0
    return pot if cards[0] > cards[1] else -pot


class KuhnModel:
    """Two-player Kuhn poker; the type is (learner's seat, learner's card, opponent's card, opponent) with the seat
    50/50 and the deal uniform, both repeated by every episode of a trial. The learner observes its seat, card and
    the betting; the opponent's card only at a showdown (the arena's summary shows it), never after a fold."""

    def __init__(self, opponents: Sequence[str], metric: str = "return") -> None:
        self.metric = _check_metric(metric)
        self.names = tuple(opponents)
        self._policies = {name: kuhn_opponent_policy(name) for name in self.names}
        self.types: tuple[Any, ...] = tuple(
            (seat, mine, theirs, name)
            for name in self.names
            for seat in (0, 1)
            for mine in range(3)
            for theirs in range(3)
            if mine != theirs
        )

    def type_weights(self, weights: Sequence[float]) -> list[float]:
        """Type prior from the opponents' weights: seat 1/2, each of the 6 deals 1/6."""
        by_name = dict(zip(self.names, weights, strict=True))
        return [by_name[kind[3]] / 12 for kind in self.types]

    def _advance(self, kind: Any, seat: int, mine: int, history: str) -> Branches:
        """Let the opponent act until the learner's turn or the end; the nodes the learner sees."""
        _, _, theirs, name = kind
        if history in _KUHN_TERMINAL:
            showdown = history in ("pp", "pbb", "bb")
            return [(1.0, (seat, mine, history, theirs if showdown else None))]
        if len(history) % 2 == seat:
            return [(1.0, (seat, mine, history))]
        bet = self._policies[name](theirs, history)
        out: list[tuple[float, Node]] = []
        for p, letter in ((1 - bet, "p"), (bet, "b")):
            if p > 0:
                out.extend((p * q, node) for q, node in self._advance(kind, seat, mine, history + letter))
        return out

    def start(self, kind: Any) -> Branches:
        seat, mine, _, _ = kind
        return self._advance(kind, seat, mine, "")

    def actions(self, node: Node) -> Sequence[int]:
        return (0, 1)

    def step(self, node: Node, action: int, kind: Any) -> Branches:
        seat, mine, history = node
        if kind[0] != seat or kind[1] != mine:
            return []
        return self._advance(kind, seat, mine, history + "pb"[action])

    def terminal(self, node: Node) -> bool:
        return len(node) == 4

    def value(self, node: Node) -> float:
        seat, mine, history, shown = node
        if shown is None:  # a fold: who folded decides
            chips = kuhn_payoff((0, 0), history) if history in ("bp", "pbp") else 0.0
        else:
            cards = (mine, shown) if seat == 0 else (shown, mine)
            chips = kuhn_payoff(cards, history)
        mine_chips = chips if seat == 0 else -chips
        return float(mine_chips > 0) if self.metric == "win_rate" else mine_chips


# -- the registry and the uniform API -------------------------------------------------------------------------------

ModelBuilder = Callable[[Mapping[str, Any], Sequence[str], str], TrialModel]


def _check_metric(metric: str) -> str:
    if metric not in ("win_rate", "return"):
        raise ValueError(f"metric must be 'win_rate' or 'return', got {metric!r}")
    return metric


def _rps(kwargs: Mapping[str, Any], opponents: Sequence[str], metric: str) -> TrialModel:
    unknown = set(kwargs) - {"rounds"}
    if unknown:
        raise NoCeiling(f"no ceiling model for rock_paper_scissors with {sorted(unknown)}")
    return RpsModel(opponents, rounds=int(kwargs.get("rounds", 5)), metric=metric)


def _doors(kwargs: Mapping[str, Any], opponents: Sequence[str], metric: str) -> TrialModel:
    from arena.arenas.doors import DEFAULT_DOORS

    if opponents:
        raise NoCeiling("doors is a single-seat arena: it takes no opponents")
    return DoorsModel(int(kwargs.get("doors", DEFAULT_DOORS)), metric=metric)


def _vault(kwargs: Mapping[str, Any], opponents: Sequence[str], metric: str) -> TrialModel:
    from arena.arenas.vault import DEFAULT_CHESTS

    if opponents:
        raise NoCeiling("vault is a single-seat arena: it takes no opponents")
    unknown = set(kwargs) - {"chests", "tasks"}
    if unknown:
        raise NoCeiling(f"no ceiling model for vault with {sorted(unknown)}")
    return VaultModel(int(kwargs.get("chests", DEFAULT_CHESTS)), int(kwargs.get("tasks", 0)), metric=metric)


def _kuhn(kwargs: Mapping[str, Any], opponents: Sequence[str], metric: str) -> TrialModel:
    if kwargs and dict(kwargs) != {"players": 2}:
        raise NoCeiling(f"no ceiling model for kuhn_poker with {dict(kwargs)}")
    return KuhnModel(opponents, metric=metric)


_MODELS: dict[str, tuple[ModelBuilder, str]] = {
    "rock_paper_scissors": (_rps, "win_rate"),
    "doors": (_doors, "win_rate"),
    "vault": (_vault, "win_rate"),
    "kuhn_poker": (_kuhn, "return"),
}


def register_model(arena_id: str, builder: ModelBuilder, default_metric: str = "win_rate") -> None:
    """Teach ``ceilings`` a new arena."""
    _MODELS[arena_id] = (builder, _check_metric(default_metric))


def model_for(
    arena_id: str, arena_kwargs: Mapping[str, Any] | None, opponents: Sequence[str], metric: str | None = None
) -> TrialModel:
    if arena_id not in _MODELS:
        raise NoCeiling(f"no ceiling model for arena {arena_id!r} (known: {', '.join(sorted(_MODELS))})")
    builder, default = _MODELS[arena_id]
    return builder(dict(arena_kwargs or {}), list(opponents), metric or default)


def supported(arena_id: str, opponents: Sequence[str], arena_kwargs: Mapping[str, Any] | None = None) -> bool:
    """Whether ``ceilings`` can answer for these opponents (cheap for RPS and doors; Kuhn's cfr may solve CFR)."""
    try:
        model_for(arena_id, arena_kwargs, opponents)
    except NoCeiling:
        return False
    return True


def _types_of(model: TrialModel, names: Sequence[str], weights: Sequence[float]) -> list[float]:
    """The type prior of a model from opponent weights (doors: uniform over the doors)."""
    if isinstance(model, KuhnModel):
        return model.type_weights(weights)
    if isinstance(model, DoorsModel):
        return [1.0] * len(model.types)
    if isinstance(model, VaultModel):
        return list(model.prior)
    by_name = dict(zip(names, weights, strict=True))
    return [by_name[str(kind)] for kind in model.types]


def ceilings(
    arena_id: str,
    arena_kwargs: Mapping[str, Any] | None = None,
    opponents: Sequence[str] = (),
    weights: Sequence[float] | None = None,
    episodes: int = 3,
    unseen: Sequence[str] = (),
    metric: str | None = None,
) -> dict[str, Any]:
    """Fixed-policy, adaptive and informed ceilings per episode (module docstring) for a pool with ``weights``."""
    names = list(opponents)
    if len(set(names)) != len(names) or set(names) & set(unseen):
        raise ValueError(f"opponents must be distinct and apart from the unseen ones: {names}, {list(unseen)}")
    w = [1.0] * len(names) if weights is None else [float(x) for x in weights]
    if len(w) != len(names) or any(x < 0 for x in w) or (names and sum(w) <= 0):
        raise ValueError(f"weights {weights} do not fit opponents {names}")
    total = sum(w) or 1.0
    w = [x / total for x in w]
    everyone = [*names, *unseen]
    model = model_for(arena_id, arena_kwargs, everyone, metric)
    zero = [0.0] * len(unseen)
    prior = _types_of(model, everyone, [*w, *zero])
    fixed = best_value(model, prior)
    out: dict[str, Any] = {
        "arena": arena_id,
        "arena_kwargs": dict(arena_kwargs or {}),
        "metric": model.metric,
        "episodes": episodes,
        "opponents": names,
        "weights": w,
        "fixed": [fixed] * episodes,
        "adaptive": adaptive_values(model, prior, episodes),
    }
    by_style: Callable[[Any], Hashable]
    if isinstance(model, KuhnModel):
        by_style = lambda kind: kind[3]  # noqa: E731
        card = informed_value(model, prior, lambda kind: (kind[3], kind[2]))
        out["card_aware"] = [card] * episodes
    else:
        by_style = lambda kind: kind  # noqa: E731
    out["informed"] = [informed_value(model, prior, by_style)] * episodes
    per: dict[str, dict[str, float]] = {}
    for i, name in enumerate(everyone if names else []):
        alone = _types_of(model, everyone, [1.0 if j == i else 0.0 for j in range(len(everyone))])
        low, high = fixed_transfer(model, prior, alone)
        per[name] = {"fixed_low": low, "fixed_high": high, "informed": best_value(model, alone)}
    out["per_opponent"] = per
    if unseen:
        out["unseen"] = list(unseen)
        out["adaptive_all"] = adaptive_values(model, _types_of(model, everyone, [1.0] * len(everyone)), episodes)
    return out


# -- the testbeds' tables (``python -m arena.arenas.ceilings``) ----------------------------------------------------

#: One testbed as ``ceilings`` arguments: (title, arena, arena kwargs, pool, weights, unseen, metric).
Testbed = tuple[str, str, dict[str, Any], tuple[str, ...], tuple[float, ...] | None, tuple[str, ...], str]
TESTBEDS: tuple[Testbed, ...] = (
    ("RPS hidden types, 1 round", "rock_paper_scissors", {"rounds": 1}, ("rps-rock", "rps-paper"), None,
     ("rps-scissors",), "win_rate"),
    *(
        (f"RPS styles, {r} rounds ({m})", "rock_paper_scissors", {"rounds": r},
         ("rps-cycle", "rps-copy", "rps-beat-last", "rps-frequency"), None, (), m)
        for r in (2, 3, 4)
        for m in ("win_rate", "return")
    ),
    *((f"doors, {n} doors", "doors", {"doors": n}, (), None, (), "win_rate") for n in (4, 10)),
    ("vault, 16 chests", "vault", {"chests": 16}, (), None, (), "win_rate"),
    ("Kuhn, MAGE's pool (chips)", "kuhn_poker", {}, ("conservative", "aggressive", "intermediate"),
     (0.3, 0.3, 0.4), ("cfr", "cfr-argmax"), "return"),
    ("Kuhn, stochastic styles (chips)", "kuhn_poker", {}, ("bluffer", "calling-station", "folder"), None,
     ("cfr", "cfr-argmax"), "return"),
)  # fmt: skip


def _row(values: Sequence[float]) -> str:
    return " / ".join(f"{v:+.4f}" if v < 0 else f"{v:.4f}" for v in values)


def testbed_tables(episodes: int = 3) -> str:
    """Markdown tables of every testbed's ceilings (what docs/testbeds.md shows)."""
    lines = []
    for title, arena_id, kwargs, pool, weights, unseen, metric in TESTBEDS:
        r = ceilings(arena_id, kwargs, pool, weights, episodes, unseen, metric)
        lines += [f"### {title}", "", "| ceiling | episode 1 / 2 / 3 |", "| --- | --- |"]
        lines.append(f"| fixed policy | {_row(r['fixed'])} |")
        lines.append(f"| adaptive | {_row(r['adaptive'])} |")
        lines.append(f"| informed (knows the type) | {_row(r['informed'])} |")
        if "card_aware" in r:
            lines.append(f"| card-aware (knows style and card) | {_row(r['card_aware'])} |")
        if "adaptive_all" in r:
            lines.append(f"| adaptive, pool + unseen uniform | {_row(r['adaptive_all'])} |")
        for name, v in r["per_opponent"].items():
            tag = " (unseen)" if name in unseen else ""
            lines.append(
                f"| vs `{name}`{tag}: pool's best fixed policy / best response | "
                f"{_row([v['fixed_low']])}..{_row([v['fixed_high']])} / {_row([v['informed']])} |"
            )
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(testbed_tables())
