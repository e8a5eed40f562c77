"""Registers ``tiny``, the model the project builds itself (core/models/tiny/build.py), and the two `tiny`s that read
a fact from their prompt: ``tiny-doors`` (a `doors` reveal, core/models/tiny/doors_reader.py) and ``tiny-vault``
(the vault's treasure, into and out of EMPO²'s tips, core/models/tiny/vault_reader.py)."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.api.markers import hookimpl
from arena.core.models.tiny import build as tiny
from arena.core.models.tiny import doors_reader, vault_reader


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
    register(
        vault_reader.NAME,
        vault_reader.resolve_tiny_vault,
        default_backend="hf",
        description="tiny that writes a vault's chest (#k) in its EMPO² tips and opens a tip's chest half the time",
        info=vault_reader.vault_reader_info,
        build=lambda force=False: vault_reader.build_tiny_vault(force=force),
    )
