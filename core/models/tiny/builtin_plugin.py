"""Registers ``tiny``, the model the project builds itself (core/models/tiny/build.py)."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.api.markers import hookimpl
from arena.core.models.tiny import build as tiny


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    # build.py imports torch/transformers inside its functions, so registering costs nothing.
    register(
        tiny.NAME,
        tiny.resolve_tiny,
        default_backend="hf",
        description="small Llama built on first use from scripted arena demonstrations (formats, untrained choices)",
        info=tiny.tiny_info,
        build=lambda force=False: tiny.build_tiny(force=force),
    )
