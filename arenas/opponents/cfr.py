"""CFR+ average-strategy opponents for Kuhn and Leduc poker (``cfr`` samples it, ``cfr-argmax`` takes its argmax).

The average strategy of CFR+ converges to a Nash equilibrium, so it is the natural "unseen, strong" evaluation
opponent for poker (MAGE evaluates Kuhn against it). Solving is done by pyspiel's C++ ``CFRPlusSolver``; the
result is flattened into a tabular policy (information-state string → action probabilities) and cached twice:
in-process (``lru_cache``) so every trial of a run shares one table, and on disk as JSON under
``${ARENA_CACHE:-~/.cache/arena}/cfr/<game>_cfrplus_<iterations>.json`` so later runs skip solving (Leduc takes
seconds). The JSON is written to a temporary file and moved into place, so concurrent workers never read a
half-written table.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pyspiel

from arena.arenas.opponents._common import pyspiel_state, require_legal
from arena.core.api.arena import SeatView

logger = logging.getLogger(__name__)

SOLVER = "cfrplus"
#: Iterations when the spec gives none. Kuhn: exploitability ≈ 9e-5 in 0.03 s. Leduc: ≈ 1e-3 in about 4 s.
DEFAULT_ITERATIONS: dict[str, int] = {"kuhn_poker": 1000, "leduc_poker": 500}
CFR_ARENAS: tuple[str, ...] = tuple(DEFAULT_ITERATIONS)
_FORMAT_VERSION = 1

#: Information-state string → ((action, probability), ...), actions ascending.
TabularPolicy = Mapping[str, tuple[tuple[int, float], ...]]


def cache_dir() -> Path:
    """Where CFR tables live: ``$ARENA_CACHE/cfr``, by default ``~/.cache/arena/cfr``."""
    root = os.environ.get("ARENA_CACHE") or os.path.join("~", ".cache", "arena")
    return Path(root).expanduser() / "cfr"


def cache_path(game_name: str, iterations: int, directory: Path | None = None) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_=,.-]+", "_", game_name).strip("_")
    return (directory or cache_dir()) / f"{safe}_{SOLVER}_{iterations}.json"


def game_key(game: Any) -> str:
    """The game string pyspiel loads it from: ``kuhn_poker`` or ``kuhn_poker(players=3)``."""
    text = str(game)
    return text[:-2] if text.endswith("()") else text


def cfr_policy(game_name: str, iterations: int) -> TabularPolicy:
    """The CFR+ average strategy of ``game_name`` after ``iterations`` iterations, from cache when possible."""
    return _cached_policy(game_name, iterations, str(cache_dir()))


@cache
def _cached_policy(game_name: str, iterations: int, directory: str) -> TabularPolicy:
    # The cache directory is part of the key so that changing ARENA_CACHE (tests do) is honoured.
    path = cache_path(game_name, iterations, Path(directory))
    table = _read_cache(path, game_name, iterations)
    if table is None:
        table, exploitability, seconds = compute_cfr_policy(game_name, iterations)
        _write_cache(path, game_name, iterations, table, exploitability, seconds)
    return MappingProxyType({key: tuple((int(a), float(p)) for a, p in pairs) for key, pairs in table.items()})


def compute_cfr_policy(game_name: str, iterations: int) -> tuple[dict[str, list[tuple[int, float]]], float, float]:
    """Run CFR+ and return (tabular average policy, its exploitability, seconds spent)."""
    game = pyspiel.load_game(game_name)
    logger.info("computing the CFR+ average strategy of %s (%d iterations)", game_name, iterations)
    start = time.perf_counter()
    solver = pyspiel.CFRPlusSolver(game)
    next_report = start + 10.0
    for i in range(iterations):
        solver.evaluate_and_update_policy()
        if time.perf_counter() > next_report:  # only long solves (big iteration counts) report progress
            logger.info("CFR+ on %s: %d/%d iterations", game_name, i + 1, iterations)
            next_report += 10.0
    table = tabulate_policy(game, solver.average_policy())
    seconds = time.perf_counter() - start
    # Exploitability is defined for two-player zero-sum games; n-player tables are still valid strategies.
    exploitability = float(pyspiel.exploitability(game, table)) if game.num_players() == 2 else float("nan")
    logger.info(
        "CFR+ on %s done in %.1f s: %d information states, exploitability %.2e",
        game_name,
        seconds,
        len(table),
        exploitability,
    )
    return table, exploitability, seconds


def tabulate_policy(game: Any, policy: Any) -> dict[str, list[tuple[int, float]]]:
    """Walk the whole game tree and record ``policy`` at every information state of every player."""
    table: dict[str, list[tuple[int, float]]] = {}
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        if state.is_terminal():
            continue
        if not state.is_chance_node():
            key = state.information_state_string(state.current_player())
            if key not in table:
                probs = policy.action_probabilities(state)
                table[key] = sorted((int(a), float(p)) for a, p in probs.items())
        stack.extend(state.child(a) for a in state.legal_actions())
    return table


def _read_cache(path: Path, game_name: str, iterations: int) -> dict[str, list[tuple[int, float]]] | None:
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if (data["format"], data["game"], data["solver"], data["iterations"]) != (
            _FORMAT_VERSION,
            game_name,
            SOLVER,
            iterations,
        ):
            raise ValueError("header does not match")
        table = {str(k): [(int(a), float(p)) for a, p in v] for k, v in data["policy"].items()}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        logger.warning("ignoring unreadable CFR cache %s (%s); recomputing", path, exc)
        return None
    logger.debug("loaded CFR policy of %s from %s", game_name, path)
    return table


def _write_cache(
    path: Path,
    game_name: str,
    iterations: int,
    table: dict[str, list[tuple[int, float]]],
    exploitability: float,
    seconds: float,
) -> None:
    data = {
        "format": _FORMAT_VERSION,
        "game": game_name,
        "solver": SOLVER,
        "iterations": iterations,
        "exploitability": exploitability,
        "seconds": round(seconds, 3),
        "policy": table,
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f)
            os.chmod(tmp, 0o644)  # mkstemp creates 0600; the cache may be shared by users of one machine
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as exc:  # a read-only cache must not stop play: the table is still in memory
        logger.warning("could not write CFR cache %s (%s)", path, exc)


class CfrOpponent:
    """Plays a tabular CFR policy: sampled (``argmax=False``) or its most likely action, lowest id on ties.

    Without a ``policy`` the table is solved (or read from cache) for the game the first view shows, so arena
    options such as ``players=3`` get their own equilibrium.
    """

    def __init__(
        self,
        name: str,
        policy: TabularPolicy | None = None,
        seed: int = 0,
        argmax: bool = False,
        iterations: int | None = None,
    ) -> None:
        if policy is None and iterations is None:
            raise ValueError("CfrOpponent needs a policy or a number of iterations")
        self.name = name
        self.policy = policy
        self.iterations = iterations
        self.argmax = argmax
        self._rng = np.random.default_rng(seed)

    def probabilities(self, view: SeatView) -> list[tuple[int, float]]:
        """The policy's (action, probability) pairs over the legal actions at ``view``."""
        state = pyspiel_state(view, self.name)
        if self.policy is None:
            assert self.iterations is not None
            self.policy = cfr_policy(game_key(state.get_game()), self.iterations)
        key = state.information_state_string(view.seat)
        try:
            pairs = self.policy[key]
        except KeyError:
            raise RuntimeError(f"opponent {self.name!r}: information state {key!r} is not in the CFR table") from None
        legal = set(view.legal_actions())
        return [(a, p) for a, p in pairs if a in legal]

    def act(self, view: SeatView) -> int:
        pairs = self.probabilities(view)
        if not pairs:
            raise RuntimeError(f"opponent {self.name!r}: no legal action has a probability")
        actions = [a for a, _ in pairs]
        probs = np.array([max(p, 0.0) for _, p in pairs])
        if self.argmax:
            best = probs.max()
            action = min(a for a, p in zip(actions, probs, strict=True) if p >= best - 1e-12)
        else:
            total = probs.sum()
            cdf = np.cumsum(probs / total) if total > 0 else np.linspace(1 / len(probs), 1, len(probs))
            index = int(np.searchsorted(cdf, self._rng.random(), side="right"))
            action = actions[min(index, len(actions) - 1)]
        return require_legal(self.name, view, action)
