"""The tick batcher: every pending generation of every live trial goes to the backend in one batch.

Trials are asyncio coroutines. A trial that needs text calls ``await batcher.submit([...])`` with all the
requests it needs at once (one LLM seat's action, or every LLM seat of a simultaneous-move round, or all of
its reflections). When every live trial is waiting, the batcher flushes: one ``Backend.generate`` call per
backend with everything pending, in submission order. Programmatic opponents answer synchronously, so a
trial is only ever waiting on the batcher, and "every live trial is waiting" is exact.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import attrs

from arena.core.api.backend import Backend, Completion, GenerationRequest


@attrs.define
class BatchStats:
    """Counters for ``arena bench`` and the one-batch-per-tick tests."""

    ticks: int = 0
    requests: int = 0
    batch_sizes: list[int] = attrs.field(factory=list)
    generate_seconds: float = 0.0

    @property
    def mean_batch(self) -> float:
        return self.requests / self.ticks if self.ticks else 0.0


class TickBatcher:
    def __init__(self) -> None:
        self.live = 0
        self.waiting = 0
        self._pending: list[tuple[Sequence[tuple[Backend, GenerationRequest]], asyncio.Future[list[list[Completion]]]]]
        self._pending = []
        self._scheduled = False
        self.stats = BatchStats()

    def trial_started(self) -> None:
        self.live += 1

    def trial_finished(self) -> None:
        self.live -= 1
        self._maybe_flush()

    async def submit(self, items: Sequence[tuple[Backend, GenerationRequest]]) -> list[list[Completion]]:
        """Queue ``items`` for the next tick; returns ``request.n`` completions per item, in order."""
        if not items:
            return []
        future: asyncio.Future[list[list[Completion]]] = asyncio.get_running_loop().create_future()
        self._pending.append((items, future))
        self.waiting += 1
        self._maybe_flush()
        return await future

    def _maybe_flush(self) -> None:
        if self._pending and self.waiting >= self.live and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        if not self._pending or self.waiting < self.live:
            return
        pending, self._pending = self._pending, []
        self.waiting -= len(pending)
        # Group by backend object, keeping submission order inside each backend's batch.
        groups: dict[int, tuple[Backend, list[tuple[int, int, GenerationRequest]]]] = {}
        for p_index, (items, _) in enumerate(pending):
            for i_index, (backend, request) in enumerate(items):
                groups.setdefault(id(backend), (backend, []))[1].append((p_index, i_index, request))
        results: list[list[list[Completion] | None]] = [[None] * len(items) for items, _ in pending]
        started = time.perf_counter()
        try:
            for backend, entries in groups.values():
                requests = [request for _, _, request in entries]
                answers = backend.generate(requests)
                if len(answers) != len(requests):
                    raise RuntimeError(
                        f"backend {getattr(backend, 'name', backend)!r} returned {len(answers)} results "
                        f"for {len(requests)} requests"
                    )
                self.stats.batch_sizes.append(len(requests))
                self.stats.requests += len(requests)
                for (p_index, i_index, _), answer in zip(entries, answers, strict=True):
                    results[p_index][i_index] = answer
        except BaseException as exc:
            for _, future in pending:
                if not future.done():
                    future.set_exception(exc)
            return
        finally:
            self.stats.generate_seconds += time.perf_counter() - started
        self.stats.ticks += 1
        for (_, future), result in zip(pending, results, strict=True):
            if not future.done():
                future.set_result([r for r in result if r is not None])
