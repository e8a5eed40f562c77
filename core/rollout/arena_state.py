"""Copy and restore the whole state of an arena mid-episode, so search and Monte-Carlo rollouts can branch from it.

``snapshot(env)`` returns an opaque, independent copy of everything that decides the env's future; ``restore(env,
snap)`` puts it back (one snapshot can be restored any number of times, into the env it came from or into another
env of the same arena and kwargs). With the same actions afterwards, a restored env produces the same observations,
rewards and end as the original did: chance events included, because the env's random generator is part of the
snapshot.

Two kinds of arena are supported:

* arenas whose env implements ``get_state() -> object`` and ``set_state(object)`` (``text_maze``): those are used;
* OpenSpiel arenas through shimmy's PettingZoo wrapper (``env.unwrapped.game_state`` is a pyspiel state): the
  pyspiel state is cloned, and the wrapper's own bookkeeping (agents, selection, rewards, terminations,
  truncations, infos, observations, game length, pending simultaneous actions, the numpy generator that samples
  chance nodes) is deep-copied.

Anything else raises ``ArenaError``: SAFARI's tree expansion and rollouts need one of the two.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
import numpy as np

from arena.core.api.errors import ArenaError

__all__ = ["ArenaSnapshot", "restore", "snapshot", "supports"]

#: The attributes of shimmy's ``OpenSpielCompatibilityV0`` that change during an episode (besides the game state).
_SHIMMY_FIELDS = (
    "agents",
    "agent_selection",
    "rewards",
    "_cumulative_rewards",
    "terminations",
    "truncations",
    "infos",
    "observations",
    "game_length",
    "simultaneous_actions",
)


@attrs.frozen(eq=False)
class ArenaSnapshot:
    """A copy of an env's state; ``kind`` says which mechanism made it (``get_state`` or ``openspiel``)."""

    kind: str
    env_type: str
    payload: Any


def _unwrapped(env: Any) -> Any:
    return getattr(env, "unwrapped", env)


def supports(env: Any) -> bool:
    """Whether ``snapshot``/``restore`` can copy this env."""
    inner = _unwrapped(env)
    return (hasattr(inner, "get_state") and hasattr(inner, "set_state")) or hasattr(inner, "game_state")


def snapshot(env: Any) -> ArenaSnapshot:
    """An independent copy of the env's current state (see the module docstring for what it holds)."""
    inner = _unwrapped(env)
    name = type(inner).__name__
    if hasattr(inner, "get_state") and hasattr(inner, "set_state"):
        return ArenaSnapshot("get_state", name, inner.get_state())
    if hasattr(inner, "game_state"):
        fields = {f: copy.deepcopy(getattr(inner, f)) for f in _SHIMMY_FIELDS if hasattr(inner, f)}
        rng = getattr(inner, "np_random", None)
        payload = {
            "game_state": inner.game_state.clone(),
            "fields": fields,
            "rng": copy.deepcopy(rng) if isinstance(rng, np.random.Generator) else None,
            "np_seed": getattr(inner, "np_seed", None),
        }
        return ArenaSnapshot("openspiel", name, payload)
    raise ArenaError(
        f"arena env {name} cannot copy its state: SAFARI needs get_state()/set_state() on the env or an OpenSpiel arena"
    )


def restore(env: Any, snap: ArenaSnapshot) -> None:
    """Put ``snap`` back into ``env`` (an env of the same arena); the snapshot stays usable afterwards."""
    inner = _unwrapped(env)
    if type(inner).__name__ != snap.env_type:
        raise ArenaError(f"a snapshot of a {snap.env_type} env cannot be restored into a {type(inner).__name__}")
    if snap.kind == "get_state":
        inner.set_state(snap.payload)
        return
    payload = snap.payload
    inner.game_state = payload["game_state"].clone()
    for name, value in payload["fields"].items():
        setattr(inner, name, copy.deepcopy(value))
    if payload["rng"] is not None:
        inner.np_random = copy.deepcopy(payload["rng"])
        inner.np_seed = payload["np_seed"]
