"""rae: Role-conditioned Advantage Estimation from SPIRAL (Liu et al., "SPIRAL: Self-Play on Zero-Sum Games
Incentivizes Reasoning via Multi-Agent Multi-Turn Reinforcement Learning", arXiv 2506.24119; code spiral-rl/spiral).

In self-play one policy plays every role of a zero-sum game, and the roles need not be balanced (the first player
of tic-tac-toe wins more often). A single baseline would push the policy towards whatever the advantaged role
does; SPIRAL keeps one exponential moving average of the return per (game, role)::

    b_old = b[arena, role]                  (``init`` before the first update)
    A     = G − b_old                       read BEFORE the update, so the return does not baseline itself
    b[arena, role] ← decay · b_old + (1 − decay) · R

with the arena from ``sample.meta["arena"]`` (``""`` when absent), the role ``sample.agent``, ``G`` the turn's
return ``sample.ret`` and ``R`` the game's return ``sample.meta["episode_return"]`` (else ``ret``): the authors'
code updates the EMA with the undiscounted game reward; with γ = 1 (SPIRAL's setting) ``G = R``. Baselines are also
keyed by ``sample.learner`` (each learner has an ``RAE`` instance of its own, so this only matters to a caller that
feeds one instance several learners' samples). As in the authors' code the baseline is read and updated once per
*trajectory* (one seat's turns in one episode: ``(trial_id, episode, agent)``), in the order trajectories first
appear in the batch, with the ``R`` of the trajectory's first sample; every turn of the trajectory uses that
trajectory's ``b_old`` (a reflection written after episode n belongs to episode n's trajectory). ``update_per:
sample`` reads and updates once per sample instead.

The turn's advantage sits on its LAST completion token (a per-token list of zeros ending in A), as SPIRAL puts the
game reward on the last token; a sample with no completion tokens gets ``[]``.

State: the baselines live in an ``RAE`` instance (the entry point is the class, ``arena.plugins.rae:RAE``: one
instance per learner), not in the samples. The run checkpoints them with ``state_dict()`` (JSON-serialisable) and
restores them with ``load_state_dict(state)`` on resume, like a model or optimiser (``StatefulPlugin``,
``arena.core.api.state``).

Hooks: ``compute_advantages``.

| setting | default | meaning |
| --- | --- | --- |
| ``decay`` | ``0.95`` | EMA decay of the per-(arena, role) baseline |
| ``init`` | ``0.0`` | baseline before the first update of a key |
| ``update_per`` | ``trajectory`` | ``trajectory`` (authors' code) or ``sample`` |
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

import attrs

from arena.core import Sample, hookimpl, read_settings, setting

NAME = "rae"
STATE_VERSION = 1


@attrs.frozen
class Settings:
    """rae's settings: ``options.rae`` of a learner (checked when the run config loads)."""

    decay: float = setting(
        0.95,
        "EMA decay of the per-(arena, role) baseline, in [0, 1)",
        validator=attrs.validators.and_(attrs.validators.ge(0.0), attrs.validators.lt(1.0)),
    )
    init: float = setting(0.0, "baseline before the first update of a key")
    update_per: Literal["trajectory", "sample"] = setting("trajectory", "trajectory (authors' code) or sample")


#: (learner, arena, role)
BaselineKey = tuple[str, str, str]


def rae_advantages(
    returns: Sequence[float],
    keys: Sequence[Hashable],
    trajectories: Sequence[Hashable],
    baselines: Mapping[Any, float],
    decay: float = 0.95,
    init: float = 0.0,
    update_values: Sequence[float] | None = None,
) -> tuple[list[float], dict[Any, float]]:
    """Advantages ``G − b_old`` and the updated baselines; ``baselines`` itself is left unchanged.

    ``keys[i]`` is the baseline key of sample i and ``trajectories[i]`` its trajectory: the first sample of each
    trajectory reads its key's baseline (``init`` if new) and updates it with ``update_values[i]`` (default: its
    return); the trajectory's other samples reuse the value read. Pass a distinct trajectory per sample to update
    once per sample.
    """
    values = returns if update_values is None else update_values
    if not len(returns) == len(keys) == len(trajectories) == len(values):
        raise ValueError("returns, keys, trajectories and update values must have one entry per sample")
    updated = dict(baselines)
    read: dict[Hashable, float] = {}
    out = []
    for ret, value, key, traj in zip(returns, values, keys, trajectories, strict=True):
        if traj not in read:
            old = updated.get(key, init)
            read[traj] = old
            updated[key] = decay * old + (1.0 - decay) * float(value)
        out.append(float(ret) - read[traj])
    return out, updated


def game_return(sample: Sample) -> float:
    """The return the EMA learns from: ``meta["episode_return"]`` when the sample builder set it, else ``ret``."""
    value = sample.meta.get("episode_return")
    return float(sample.ret if value is None else value)


def on_last_token(advantage: float, length: int) -> list[float]:
    """``[0, …, 0, advantage]`` of ``length`` entries (``[]`` for an empty completion)."""
    return [0.0] * (length - 1) + [advantage] if length > 0 else []


class RAE:
    """The stateful plugin: per-(learner, arena, role) EMA baselines that persist across batches."""

    #: The config check and ``arena plugins`` find the settings here (the entry point names the class).
    Settings: TypeAlias = Settings

    def __init__(self) -> None:
        self.baselines: dict[BaselineKey, float] = {}
        self.updates: dict[BaselineKey, int] = {}

    @hookimpl
    def compute_advantages(self, samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[list[float]]:
        opts = read_settings(options, NAME, Settings)
        keys: list[BaselineKey] = [(s.learner, str(s.meta.get("arena", "")), s.agent) for s in samples]
        trajectories: list[Hashable] = (
            [(s.learner, s.trial_id, s.episode, s.agent) for s in samples]
            if opts.update_per == "trajectory"
            else list(range(len(samples)))
        )
        advantages, self.baselines = rae_advantages(
            [s.ret for s in samples],
            keys,
            trajectories,
            self.baselines,
            decay=opts.decay,
            init=opts.init,
            update_values=[game_return(s) for s in samples],
        )
        seen: set[Hashable] = set()
        for key, traj in zip(keys, trajectories, strict=True):
            if traj not in seen:
                seen.add(traj)
                self.updates[key] = self.updates.get(key, 0) + 1
        return [on_last_token(a, len(s.completion_ids)) for a, s in zip(advantages, samples, strict=True)]

    def state_dict(self) -> dict[str, Any]:
        """The baselines as plain JSON data, for the trainer's checkpoint."""
        return {
            "version": STATE_VERSION,
            "baselines": [
                {"learner": k[0], "arena": k[1], "role": k[2], "value": v, "updates": self.updates.get(k, 0)}
                for k, v in sorted(self.baselines.items())
            ],
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the baselines with those of ``state`` (from :meth:`state_dict`)."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"RAE state version {state.get('version')!r}; this plugin reads version {STATE_VERSION}")
        baselines: dict[BaselineKey, float] = {}
        updates: dict[BaselineKey, int] = {}
        for entry in state["baselines"]:
            key = (str(entry["learner"]), str(entry["arena"]), str(entry["role"]))
            baselines[key] = float(entry["value"])
            updates[key] = int(entry.get("updates", 0))
        self.baselines, self.updates = baselines, updates
