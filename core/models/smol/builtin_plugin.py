"""Registers the models built on SmolLM2-135M-Instruct: ``smollm2-menu`` (the answer form of SGE's menu, menu.py),
``smollm2-revise`` (acting on HeRL's hindsight prompt, revise.py), ``smollm2-revise-pairs`` (the same on
two-constraint tasks, revise_pairs.py) and ``smollm2-rps`` (the answer form of the
hidden-types testbed, its move blind to the memory, rps.py)."""

from __future__ import annotations

from collections.abc import Callable

from arena.core.api.markers import hookimpl
from arena.core.models.smol import menu, revise, revise_pairs, rps


@hookimpl
def register_models(register: Callable[..., None]) -> None:
    register(
        menu.NAME,
        menu.resolve_smollm2_menu,
        default_backend="hf",
        description="SmolLM2 SFT on the menu's answer form (plan choice untrained; reads SGE's reflection)",
        info=menu.smollm2_menu_info,
        build=lambda force=False: menu.build_smollm2_menu(force=force),
    )
    register(
        revise.NAME,
        revise.resolve_smollm2_revise,
        default_backend="hf",
        description="SmolLM2 SFT on HeRL's hindsight revisions of its own drafts (first answers anchored to its own)",
        info=revise.smollm2_revise_info,
        build=lambda force=False: revise.build_smollm2_revise(force=force),
    )
    register(
        revise_pairs.NAME,
        revise_pairs.resolve_smollm2_revise_pairs,
        default_backend="hf",
        description="smollm2-revise's recipe on two-constraint tasks, its revisions keeping what the draft met",
        info=revise_pairs.smollm2_revise_pairs_info,
        build=lambda force=False: revise.build_smollm2_revise(force=force, spec=revise_pairs.PAIRS),
    )
    register(
        rps.NAME,
        rps.resolve_smollm2_rps,
        default_backend="hf",
        description="SmolLM2 SFT on the hidden-types RPS answer form (move uniform, blind to the memory)",
        info=rps.smollm2_rps_info,
        build=lambda force=False: rps.build_smollm2_rps(force=force),
    )
