"""Seat specs: who plays a seat.

* ``model:NAME[@BACKEND]``: an LLM (a built-in model name, a local path or a hub id) through a backend.
* ``OPPONENT[:ARG]``: a registered programmatic opponent (``random``, ``mcts:1000``, ``cfr``, ...).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from arena.core.api.backend import Backend
from arena.core.api.errors import ArenaError
from arena.core.host import catalog

DEFAULT_BACKEND = "hf"


@attrs.frozen
class SeatSpec:
    text: str
    kind: Literal["model", "opponent"]
    name: str
    arg: str | None = None
    backend: str | None = None


def parse_seat(text: str) -> SeatSpec:
    spec = text.strip()
    if not spec:
        raise ArenaError("empty seat spec; use e.g. 'random', 'mcts:100' or 'model:tiny'")
    if spec.startswith("model:"):
        rest = spec[len("model:") :]
        name, _, backend = rest.partition("@")
        if not name:
            raise ArenaError(f"seat spec {text!r} names no model; use e.g. 'model:tiny' or 'model:tiny@vllm'")
        return SeatSpec(text=spec, kind="model", name=name, backend=backend or None)
    name, sep, arg = spec.partition(":")
    return SeatSpec(text=spec, kind="opponent", name=name, arg=arg if sep else None)


def check_opponent(seat: SeatSpec, arena_id: str) -> None:
    """Unknown opponents and opponents that do not play ``arena_id`` fail before any game starts."""
    entry = catalog.opponents().get(seat.name)
    supported = entry.meta.get("arenas")
    if supported is not None and arena_id not in supported:
        raise ArenaError(
            f"opponent {seat.name!r} does not play arena {arena_id!r}; it plays: {', '.join(sorted(supported))}"
        )


def make_opponent(seat: SeatSpec, arena_id: str, seed: int) -> Any:
    check_opponent(seat, arena_id)
    return catalog.opponents().get(seat.name).create("opponent", arena_id=arena_id, arg=seat.arg, seed=seed)


class BackendPool:
    """One backend object per (backend, model): seats and trials sharing a model share its batches."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        self._backends: dict[tuple[str, str], Backend] = {}
        self.options = dict(options or {})

    def add(self, backend_name: str, model: str, backend: Backend) -> None:
        """Use an existing backend object (tests, a trainer sharing its model) for ``model:MODEL@BACKEND``."""
        self._backends[(backend_name, model)] = backend

    def get(self, seat: SeatSpec) -> Backend:
        backend_name, model = self.resolve(seat)
        key = (backend_name, model)
        if key not in self._backends:
            entry = catalog.backends().get(backend_name)
            self._backends[key] = entry.create("backend", model=model, **self.options.get(backend_name, {}))
        return self._backends[key]

    @staticmethod
    def resolve(seat: SeatSpec) -> tuple[str, str]:
        """``(backend name, model location)`` for a model seat; named models pick their default backend."""
        models = catalog.models()
        if seat.name in models:
            entry = models.get(seat.name)
            backend = seat.backend or str(entry.meta.get("default_backend", DEFAULT_BACKEND))
            return backend, seat.name
        return seat.backend or DEFAULT_BACKEND, seat.name
