"""The ``arena train`` config: the learners, the opponents they train against, and how they learn."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from arena.core.settings import TrialConfig, _positive
from arena.core.trainer import LossConfig, OptimConfig
from arena.populations.settings import PopulationConfig


@attrs.frozen
class OpponentEntry:
    """One member of the training pool: a seat spec and its sampling weight."""

    spec: str
    weight: float = 1.0


@attrs.frozen
class LearnerConfig:
    """One learner: its model, backend, enabled plugins (and their options), optimizer and loss."""

    name: str = "agent"
    model: str = "tiny"
    backend: str | None = None
    plugins: list[str] = attrs.field(factory=lambda: ["grpo"])
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    optim: OptimConfig = attrs.field(factory=OptimConfig)
    loss: LossConfig = attrs.field(factory=LossConfig)
    gamma: float = 1.0
    invalid_penalty: float = 0.0

    @property
    def seat_spec(self) -> str:
        return f"model:{self.model}" + (f"@{self.backend}" if self.backend else "")


@attrs.frozen
class EvalConfig:
    """Periodic evaluation on fixed seeds (``every`` iterations; 0 = only at the start and the end)."""

    every: int = 0
    games: int = attrs.field(default=100, validator=_positive)
    opponents: list[str] = attrs.field(factory=list)
    seed: int = 1_000_000
    #: Arena kwargs for evaluation on top of the run's (``{split: test}``: held-out tasks or layouts).
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class CheckpointConfig:
    every: int = attrs.field(default=1, validator=_positive)
    keep: int = attrs.field(default=3, validator=_positive)


@attrs.frozen
class TrainConfig:
    """``groups`` groups of ``group_size`` trials per iteration; each group faces one opponent from the same seed."""

    arena: str
    opponents: list[OpponentEntry]
    learners: list[LearnerConfig] = attrs.field(factory=lambda: [LearnerConfig()])
    #: Opponents held out of training, for ``arena eval --opponents unseen`` (MAGE: CFR for Kuhn, MCTS-1000).
    unseen: list[str] = attrs.field(factory=list)
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)
    seed: int = 0
    iterations: int = attrs.field(default=10, validator=_positive)
    groups: int = attrs.field(default=16, validator=_positive)
    group_size: int = attrs.field(default=8, validator=_positive)
    learner_seat: Literal["random", "first", "last"] = "random"
    #: N > 0: every group's seed (its deal, layout or task) is one of N recurring seeds, so per-task memories
    #: (EMPO² tips, SGE strategy buffers) meet their task again; 0: a fresh seed per group.
    task_pool: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    trial: TrialConfig = attrs.field(factory=TrialConfig)
    eval: EvalConfig = attrs.field(factory=EvalConfig)
    checkpoint: CheckpointConfig = attrs.field(factory=CheckpointConfig)
    #: Snapshots (fictitious self-play), PFSP, learners as each other's opponents, ratings.
    population: PopulationConfig = attrs.field(factory=PopulationConfig)
    #: Keyword arguments for backend factories, by backend name (``{vllm: {gpu_memory_utilization: 0.5}}``).
    backend_options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    max_live_trials: int = attrs.field(default=512, validator=_positive)
    torch_threads: int = 0
