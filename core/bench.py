"""``arena bench``: measured numbers, not timed tests.

``rollout`` plays many concurrent trials through the real engine, records every batch the engine sent to the
backend, then replays exactly those batches as raw ``generate`` calls in the same process. The ratio of the two
token rates is the share of time the loop itself costs (target ≥ 0.9: overhead under 10%).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import attrs

from arena.core.backends.base import Backend, Completion, GenerationRequest
from arena.core.engine import RolloutEngine
from arena.core.plugins import PluginSet
from arena.core.records import TrialSpec
from arena.core.seats import BackendPool, parse_seat
from arena.core.settings import PromptConfig, TrialConfig

KUHN_POOL = ("conservative", "aggressive", "intermediate")


@attrs.define
class RecordingBackend:
    """Passes batches through to ``inner`` and keeps them (requests, generated tokens, seconds)."""

    inner: Backend
    batches: list[list[GenerationRequest]] = attrs.field(factory=list)
    tokens: int = 0
    seconds: float = 0.0

    @property
    def name(self) -> str:
        return self.inner.name

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]:
        started = time.perf_counter()
        out = self.inner.generate(requests)
        self.seconds += time.perf_counter() - started
        self.batches.append(list(requests))
        self.tokens += sum(len(c.token_ids) for row in out for c in row)
        return out


def bench_rollout(
    model: str = "tiny",
    backend: str | None = None,
    trials: int = 256,
    episodes: int = 3,
    max_new_tokens: int = 48,
    seed: int = 0,
) -> dict[str, Any]:
    """Kuhn poker trials against MAGE's pool on ``model``, with reflections; rollout vs raw generate."""
    seat = parse_seat(f"model:{model}" + (f"@{backend}" if backend else ""))
    pool = BackendPool()
    backend_name, model_name = pool.resolve(seat)
    inner = pool.get(seat)
    recorder = RecordingBackend(inner)
    recording_pool = BackendPool()
    recording_pool.add(backend_name, model_name, recorder)  # type: ignore[arg-type]
    config = TrialConfig(episodes=episodes, prompt=PromptConfig(max_new_tokens=max_new_tokens))
    specs = [
        TrialSpec(
            trial_id=f"bench-{i:05d}",
            arena_id="kuhn_poker",
            seats=(seat.text, KUHN_POOL[i % len(KUHN_POOL)]) if i % 2 == 0 else (KUHN_POOL[i % 3], seat.text),
            seed=seed + i,
            episodes=episodes,
        )
        for i in range(trials)
    ]
    # Warm up (first calls allocate caches and pick kernels) on a slice of the real prompts' shape.
    engine = RolloutEngine(PluginSet(["reflection"]), config, backends=recording_pool, max_live_trials=trials)
    engine.run(specs[: min(4, trials)])
    recorder.batches.clear()
    recorder.tokens, recorder.seconds = 0, 0.0

    engine = RolloutEngine(PluginSet(["reflection"]), config, backends=recording_pool, max_live_trials=trials)
    started = time.perf_counter()
    records = engine.run(specs)
    rollout_seconds = time.perf_counter() - started
    rollout_tokens = recorder.tokens

    started = time.perf_counter()
    raw_tokens = 0
    for batch in recorder.batches:
        raw_tokens += sum(len(c.token_ids) for row in inner.generate(batch) for c in row)
    raw_seconds = time.perf_counter() - started

    rollout_tps = rollout_tokens / rollout_seconds if rollout_seconds else 0.0
    raw_tps = raw_tokens / raw_seconds if raw_seconds else 0.0
    invalid = sum(e.invalid_actions[a] for t in records for e in t.episodes for a in e.invalid_actions)
    llm_turns = sum(1 for t in records for e in t.episodes for s in e.steps if s.completion is not None)
    return {
        "model": model_name,
        "backend": backend_name,
        "trials": trials,
        "episodes": episodes,
        "max_new_tokens": max_new_tokens,
        "rollout_seconds": round(rollout_seconds, 3),
        "rollout_tokens": rollout_tokens,
        "rollout_tokens_per_s": round(rollout_tps, 1),
        "trials_per_s": round(trials / rollout_seconds, 3) if rollout_seconds else 0.0,
        "raw_seconds": round(raw_seconds, 3),
        "raw_tokens": raw_tokens,
        "raw_tokens_per_s": round(raw_tps, 1),
        "ratio": round(rollout_tps / raw_tps, 4) if raw_tps else 0.0,
        "ticks": len(recorder.batches),
        "mean_batch": round(sum(len(b) for b in recorder.batches) / max(1, len(recorder.batches)), 1),
        "generate_seconds_in_rollout": round(recorder.seconds, 3),
        "llm_turns": llm_turns,
        "invalid_answers": invalid,
    }
