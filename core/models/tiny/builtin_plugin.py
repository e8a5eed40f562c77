"""Registers ``tiny``, the model the project builds itself (core/models/tiny/build.py), and ``tiny-doors``, the
`tiny` that reads a `doors` reveal (core/models/tiny/doors_reader.py)."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.api.markers import hookimpl
from arena.core.models.tiny import build as tiny
from arena.core.models.tiny import doors_reader


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
    register(
        doors_reader.NAME,
        doors_reader.resolve_tiny_doors,
        default_backend="hf",
        description="tiny with its memory circuit on the doors' reveal (door #k), SFT to open a revealed door by id",
        info=doors_reader.reader_info,
        build=lambda force=False: doors_reader.build_tiny_doors(force=force),
    )
