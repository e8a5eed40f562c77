"""Registers the backends that ship with arena (the models register themselves: core/models, core/models/tiny)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.api.markers import hookimpl
from arena.core.backends.scripted import ScriptedBackend


def _hf(model: str, **options: Any) -> Any:
    # Imported on use: torch and transformers take seconds to import and `arena arenas` needs neither.
    from arena.core.backends.hf import make_hf_backend

    return make_hf_backend(model, **options)


def _vllm(model: str, **options: Any) -> Any:
    try:
        from arena.core.backends.vllm_backend import make_vllm_backend
    except ImportError as exc:
        raise ArenaError(
            f"the vllm backend needs vLLM ({exc}); install the extra (`pip install 'arena-rl[vllm]'`) or, on CPU, "
            "use the vllm venv (`make vllm-venv`)"
        ) from None
    return make_vllm_backend(model, **options)


@hookimpl
def register_backends(register: Callable[..., None]) -> None:
    register("scripted", ScriptedBackend, description="deterministic fake LLM: random legal moves (tests, demos)")
    register("hf", _hf, description="transformers: batched sampling with KV cache; CPU float32, GPU bfloat16")
    register("vllm", _vllm, description="vLLM: two-phase segments with prefix caching, in-place weight sync")
