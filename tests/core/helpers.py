"""Small builders shared by the core tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from arena.core.api.backend import GenerationRequest
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.backends.scripted import ScriptedBackend
from arena.core.config.trial import TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool


def scripted_pool(
    responder: Callable[[GenerationRequest, np.random.Generator], str] | None = None,
) -> tuple[BackendPool, ScriptedBackend]:
    backend = ScriptedBackend(responder=responder)
    pool = BackendPool()
    pool.add("scripted", "scripted", backend)
    return pool, backend


def specs(
    n: int, arena: str = "kuhn_poker", seats: Sequence[str] = ("model:scripted", "random"), episodes: int = 1, **kw
) -> list[TrialSpec]:
    return [
        TrialSpec(trial_id=f"t{i}", arena_id=arena, seats=tuple(seats), seed=i, episodes=episodes, **kw)
        for i in range(n)
    ]


def play(
    trial_specs: Sequence[TrialSpec],
    plugins: Sequence[str] = (),
    extra: dict[str, object] | None = None,
    config: TrialConfig | None = None,
    responder: Callable[[GenerationRequest, np.random.Generator], str] | None = None,
    max_live_trials: int = 256,
) -> tuple[list[TrialRecord], ScriptedBackend, RolloutEngine]:
    pool, backend = scripted_pool(responder)
    engine = RolloutEngine(PluginSet(plugins, extra=extra), config, backends=pool, max_live_trials=max_live_trials)
    return engine.run(trial_specs), backend, engine
