"""``arena check-arena ID``: what a new arena's author wants to know before training on it.

Four checks, each reported with what it found:

1. **PettingZoo's own API test** (``pettingzoo.test.api_test`` for AEC envs, ``parallel_api_test`` for Parallel
   ones) on a fresh env.
2. **The first prompt** each LLM seat would get, built by the real engine (one trial with ``model:scripted``
   seats), so the author reads exactly what the model will read.
3. **Move names round-trip through the parser**: over a few random episodes, at every decision point, every legal
   move's name (and alias) answered as ``<action>NAME</action>`` must parse back to that move.
4. **Traps**: a move name that is a bare number equal to *another* legal move's action id (the parser reads the
   name first, so the model cannot pick that action by its id), and an ``action_name`` that differs between the
   acting seat's view and another seat's view of the same action: the engine names a move from the acting seat's
   view and shows that name to every seat, so a difference means the name carries what only the actor knows
   (the hidden number of a guessing game, a private card).
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from arena.core.api.arena import Move, SeatView
from arena.core.api.records import TrialSpec
from arena.core.config.trial import TrialConfig
from arena.core.host import catalog
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.text_adapter import action_mask_of, adapter_for, parse_action


@attrs.frozen
class Finding:
    """One check's verdict: ``ok`` false means the author should look; ``details`` say where."""

    check: str
    ok: bool
    summary: str
    details: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "ok": self.ok, "summary": self.summary, "details": list(self.details)}


def check_arena(arena_id: str, seats: Sequence[str] = (), episodes: int = 5, seed: int = 0) -> list[Finding]:
    """Run the four checks (module docstring) on ``arena_id``; ``seats`` default to ``model:scripted`` for all."""
    env = catalog.make_arena(arena_id)
    n_players = len(env.possible_agents)
    env.close()
    seats = tuple(seats) or ("model:scripted",) * n_players
    return [
        api_check(arena_id),
        first_prompts(arena_id, seats, seed),
        *move_checks(arena_id, episodes, seed),
    ]


def api_check(arena_id: str) -> Finding:
    from pettingzoo.test import api_test, parallel_api_test

    env = catalog.make_arena(arena_id)
    kind = catalog.api_kind(env)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kind == "parallel":
                parallel_api_test(env, num_cycles=100)
            else:
                api_test(env, num_cycles=100, verbose_progress=False)
    except Exception as exc:
        return Finding("pettingzoo api_test", False, f"{type(exc).__name__}: {exc}")
    finally:
        with contextlib.suppress(Exception):
            env.close()
    said = tuple(dict.fromkeys(f"warning: {w.message}" for w in caught))
    return Finding("pettingzoo api_test", True, f"passed ({kind} API)", said)


def first_prompts(arena_id: str, seats: Sequence[str], seed: int) -> Finding:
    spec = TrialSpec(trial_id="check", arena_id=arena_id, seats=tuple(seats), seed=seed, episodes=1)
    (trial,) = RolloutEngine(PluginSet([]), TrialConfig()).run([spec])
    shown: dict[str, str] = {}
    for step in trial.episodes[0].steps:
        if step.prompt and step.agent not in shown:
            shown[step.agent] = "\n".join(f"[{m.role}]\n{m.content}" for m in step.prompt)
    if not shown:
        return Finding("first prompts", False, "no LLM seat moved (give --seat model:scripted for the seats to check)")
    details = tuple(f"--- {agent} ---\n{text}" for agent, text in shown.items())
    return Finding("first prompts", True, f"{len(shown)} LLM seat(s)", details)


def move_checks(arena_id: str, episodes: int, seed: int) -> list[Finding]:
    rng = np.random.default_rng(seed)
    round_trip: list[str] = []
    clashes: set[str] = set()
    leaks: set[str] = set()
    decisions = 0
    for episode in range(episodes):
        env = catalog.make_arena(arena_id)
        adapter = adapter_for(env)
        if catalog.api_kind(env) == "parallel":
            env.close()
            return [Finding("move names", True, "skipped: Parallel env (moves are checked on AEC envs)")]
        env.reset(seed=seed + episode)
        for agent in env.agent_iter(max_iter=10_000):
            observation, _, terminated, truncated, info = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            view = SeatView(
                env, agent, env.possible_agents.index(agent), observation, action_mask_of(observation, info), dict(info)
            )
            moves = adapter.legal_moves(view)
            if not moves:  # a free-text arena parses whole answers itself
                env.close()
                return [Finding("move names", True, "skipped: free-text arena (no move list)")]
            decisions += 1
            round_trip += _round_trip(moves)
            clashes |= _clashes(moves)
            action = int(rng.choice([m.action for m in moves]))
            leaks |= _leaks(env, adapter, view, action)
            env.step(action)
        env.close()
    return [
        Finding(
            "move names parse back", not round_trip, f"{decisions} decision points", tuple(sorted(set(round_trip)))
        ),
        Finding("names that shadow action ids", not clashes, f"{len(clashes)} found", tuple(sorted(clashes))),
        Finding("action_name leaks", not leaks, f"{len(leaks)} found", tuple(sorted(leaks))),
    ]


def _round_trip(moves: Sequence[Move]) -> list[str]:
    bad = []
    for move in moves:
        for spelling in (move.name, *move.aliases):
            parsed = parse_action(f"<action>{spelling}</action>", moves)
            if parsed.action != move.action:
                bad.append(f"{spelling!r} parses as {parsed.move or parsed.error!r}, not action {move.action}")
    return bad


def _clashes(moves: Sequence[Move]) -> set[str]:
    ids = {m.action: m for m in moves}
    out = set()
    for move in moves:
        text = move.name.strip()
        if text.isdigit() and int(text) in ids and ids[int(text)] is not move:
            other = ids[int(text)]
            out.add(f"move {move.name!r} (action {move.action}) is named like action {other.action} ({other.name!r})")
    return out


def _leaks(env: Any, adapter: Any, view: SeatView, action: int) -> set[str]:
    name = adapter.action_name(view, action)
    out = set()
    for other in env.possible_agents:
        if other == view.agent:
            continue
        try:
            observation = env.observe(other)
        except Exception:
            continue
        theirs = SeatView(env, other, env.possible_agents.index(other), observation, None, {})
        try:
            their_name = adapter.action_name(theirs, action)
        except Exception:
            continue
        if their_name != name:
            out.add(f"{view.agent}'s move is shown to {other} as {name!r}; from {other}'s view it is {their_name!r}")
    return out
