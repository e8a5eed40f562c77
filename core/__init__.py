"""The public surface of arena: everything a plugin, an arena package or a notebook needs, from one place.

``from arena.core import hookimpl, Sample, TrialSpec, ...``. Built-in plugins import only from here, as third-party
plugins do; the names live in the subpackages (the contract in ``arena.core.api``) and load on first use, so that
``import arena.core`` stays cheap (no torch) and importing one core module never drags in the rest.
docs/architecture.md says which subpackage holds what.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from arena.core.api.arena import (
        Move,
        Opponent,
        OpponentFactory,
        ParseResult,
        SeatView,
        TextAdapter,
        moves_by_action,
    )
    from arena.core.api.augment import (
        Augmentation,
        AugmentResult,
        Finish,
        GroupTask,
        ScoredAnswer,
        answer_format_of,
        answer_sample,
        augmentable_groups,
        group_score,
        system_messages,
        task_text_of,
    )
    from arena.core.api.backend import (
        Backend,
        ChatMessage,
        Completion,
        GenerationRequest,
        Guide,
        Segment,
        reject_guided,
    )
    from arena.core.api.errors import ArenaError, ConfigError, PluginError, UnknownNameError
    from arena.core.api.markers import hookimpl, hookspec
    from arena.core.api.records import (
        ActionPlan,
        EpisodeRecord,
        MemoryItem,
        Outcome,
        Reflection,
        ReflectionRequest,
        Step,
        TrialRecord,
        TrialSpec,
        Turn,
    )
    from arena.core.api.samples import LossKind, Sample
    from arena.core.api.seeding import derive_seed
    from arena.core.api.settings import setting
    from arena.core.api.state import StatefulPlugin
    from arena.core.config.loader import load_config
    from arena.core.config.plugin_settings import read_settings
    from arena.core.config.trial import InvalidActionConfig, PromptConfig, TrialConfig
    from arena.core.eval.passk import evaluate_tasks, format_flag
    from arena.core.host.catalog import api_kind, make_arena
    from arena.core.host.plugins import PluginSet
    from arena.core.learn.advantages import group_members, group_normalized
    from arena.core.learn.sft import (
        SFTSettings,
        load_backend,
        make_trainer,
        mean_of,
        messages_of,
        run_sft,
        save_model,
        text_sample,
        train_batches,
    )
    from arena.core.learn.trainer import LossFn, LossInputs, register_loss
    from arena.core.models.embeddings import sentence_embedder
    from arena.core.rollout.arena_state import ArenaSnapshot, restore, snapshot
    from arena.core.rollout.engine import RolloutEngine, episode_outcomes
    from arena.core.rollout.prompts import build_turn_prompt
    from arena.core.rollout.seats import BackendPool, make_opponent, parse_seat
    from arena.core.rollout.text_adapter import action_mask_of, adapter_for, parse_action

# name -> module that defines it
_EXPORTS: dict[str, str] = {
    "ArenaError": "arena.core.api.errors",
    "ConfigError": "arena.core.api.errors",
    "PluginError": "arena.core.api.errors",
    "UnknownNameError": "arena.core.api.errors",
    "hookimpl": "arena.core.api.markers",
    "hookspec": "arena.core.api.markers",
    "Move": "arena.core.api.arena",
    "Opponent": "arena.core.api.arena",
    "OpponentFactory": "arena.core.api.arena",
    "ParseResult": "arena.core.api.arena",
    "SeatView": "arena.core.api.arena",
    "TextAdapter": "arena.core.api.arena",
    "moves_by_action": "arena.core.api.arena",
    "ActionPlan": "arena.core.api.records",
    "EpisodeRecord": "arena.core.api.records",
    "MemoryItem": "arena.core.api.records",
    "Outcome": "arena.core.api.records",
    "Reflection": "arena.core.api.records",
    "ReflectionRequest": "arena.core.api.records",
    "Step": "arena.core.api.records",
    "TrialRecord": "arena.core.api.records",
    "TrialSpec": "arena.core.api.records",
    "Turn": "arena.core.api.records",
    "LossKind": "arena.core.api.samples",
    "Sample": "arena.core.api.samples",
    "Backend": "arena.core.api.backend",
    "ChatMessage": "arena.core.api.backend",
    "Completion": "arena.core.api.backend",
    "GenerationRequest": "arena.core.api.backend",
    "Guide": "arena.core.api.backend",
    "Segment": "arena.core.api.backend",
    "reject_guided": "arena.core.api.backend",
    "AugmentResult": "arena.core.api.augment",
    "Augmentation": "arena.core.api.augment",
    "Finish": "arena.core.api.augment",
    "GroupTask": "arena.core.api.augment",
    "ScoredAnswer": "arena.core.api.augment",
    "answer_format_of": "arena.core.api.augment",
    "answer_sample": "arena.core.api.augment",
    "augmentable_groups": "arena.core.api.augment",
    "group_score": "arena.core.api.augment",
    "system_messages": "arena.core.api.augment",
    "task_text_of": "arena.core.api.augment",
    "derive_seed": "arena.core.api.seeding",
    "StatefulPlugin": "arena.core.api.state",
    "setting": "arena.core.api.settings",
    "read_settings": "arena.core.config.plugin_settings",
    "load_config": "arena.core.config.loader",
    "InvalidActionConfig": "arena.core.config.trial",
    "PromptConfig": "arena.core.config.trial",
    "TrialConfig": "arena.core.config.trial",
    "PluginSet": "arena.core.host.plugins",
    "api_kind": "arena.core.host.catalog",
    "make_arena": "arena.core.host.catalog",
    "group_members": "arena.core.learn.advantages",
    "group_normalized": "arena.core.learn.advantages",
    "SFTSettings": "arena.core.learn.sft",
    "load_backend": "arena.core.learn.sft",
    "make_trainer": "arena.core.learn.sft",
    "mean_of": "arena.core.learn.sft",
    "messages_of": "arena.core.learn.sft",
    "run_sft": "arena.core.learn.sft",
    "save_model": "arena.core.learn.sft",
    "text_sample": "arena.core.learn.sft",
    "train_batches": "arena.core.learn.sft",
    "LossFn": "arena.core.learn.trainer",
    "LossInputs": "arena.core.learn.trainer",
    "register_loss": "arena.core.learn.trainer",
    "evaluate_tasks": "arena.core.eval.passk",
    "format_flag": "arena.core.eval.passk",
    "sentence_embedder": "arena.core.models.embeddings",
    "ArenaSnapshot": "arena.core.rollout.arena_state",
    "restore": "arena.core.rollout.arena_state",
    "snapshot": "arena.core.rollout.arena_state",
    "RolloutEngine": "arena.core.rollout.engine",
    "episode_outcomes": "arena.core.rollout.engine",
    "build_turn_prompt": "arena.core.rollout.prompts",
    "BackendPool": "arena.core.rollout.seats",
    "make_opponent": "arena.core.rollout.seats",
    "parse_seat": "arena.core.rollout.seats",
    "action_mask_of": "arena.core.rollout.text_adapter",
    "adapter_for": "arena.core.rollout.text_adapter",
    "parse_action": "arena.core.rollout.text_adapter",
}

__all__ = [
    "ActionPlan",
    "ArenaError",
    "ArenaSnapshot",
    "AugmentResult",
    "Augmentation",
    "Backend",
    "BackendPool",
    "ChatMessage",
    "Completion",
    "ConfigError",
    "EpisodeRecord",
    "Finish",
    "GenerationRequest",
    "GroupTask",
    "Guide",
    "InvalidActionConfig",
    "LossFn",
    "LossInputs",
    "LossKind",
    "MemoryItem",
    "Move",
    "Opponent",
    "OpponentFactory",
    "Outcome",
    "ParseResult",
    "PluginError",
    "PluginSet",
    "PromptConfig",
    "Reflection",
    "ReflectionRequest",
    "RolloutEngine",
    "SFTSettings",
    "Sample",
    "ScoredAnswer",
    "SeatView",
    "Segment",
    "StatefulPlugin",
    "Step",
    "TextAdapter",
    "TrialConfig",
    "TrialRecord",
    "TrialSpec",
    "Turn",
    "UnknownNameError",
    "action_mask_of",
    "adapter_for",
    "answer_format_of",
    "answer_sample",
    "api_kind",
    "augmentable_groups",
    "build_turn_prompt",
    "derive_seed",
    "episode_outcomes",
    "evaluate_tasks",
    "format_flag",
    "group_members",
    "group_normalized",
    "group_score",
    "hookimpl",
    "hookspec",
    "load_backend",
    "load_config",
    "make_arena",
    "make_opponent",
    "make_trainer",
    "mean_of",
    "messages_of",
    "moves_by_action",
    "parse_action",
    "parse_seat",
    "read_settings",
    "register_loss",
    "reject_guided",
    "restore",
    "run_sft",
    "save_model",
    "sentence_embedder",
    "setting",
    "snapshot",
    "system_messages",
    "task_text_of",
    "text_sample",
    "train_batches",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
