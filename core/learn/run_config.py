"""The ``arena train`` config: the learners, the opponents they train against, and how they learn."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from arena.core.config.trial import TrialConfig, _non_negative, _positive
from arena.core.learn.trackers import TrackerName, normalize_report_to
from arena.core.learn.trainer import LossConfig, OptimConfig
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

    @property
    def unused_options(self) -> list[str]:
        """Option sections that name no enabled plugin (``options.overlong`` with ``plugins: [grpo]``).

        Nothing reads them: usually a typo, or a plugin taken off the list by an override that left its settings.
        """
        return sorted(set(self.options) - set(self.plugins))


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


def _non_negative_float(instance: Any, attribute: attrs.Attribute[Any], value: float) -> None:
    if not value >= 0:
        raise ValueError(f"{attribute.name} must be at least 0, got {value}")


def _some_learner(instance: Any, attribute: attrs.Attribute[Any], value: list[Any]) -> None:
    if not value:
        raise ValueError("learners is empty; a run trains at least one learner (name, model, plugins)")


@attrs.frozen
class DynamicSamplingConfig:
    """DAPO's dynamic sampling (Yu et al. 2025, arXiv 2503.14476, section 3.2), per learner; off by default.

    A group whose trials all got the same reward has zero group-relative advantage: it adds no gradient, only
    dilutes the batch. With ``enabled``, groups count as *informative* when the population std of their trials'
    rewards exceeds ``min_std`` (and the rewards are not all equal); while fewer than ``groups`` are informative,
    up to ``max_rounds`` extra rounds play fresh matchups for the missing count. Then the first ``groups``
    informative groups in play order train (all informative ones if the rounds ran out); the others are dropped
    from the update, though they count in the population's ratings as played. A trial's reward is the mean reward
    of its samples, summed over ``reward_terms`` (empty: every term; ``[env]``: the environment's reward only,
    DAPO's accuracy filter that ignores its overlong penalty). See ``arena.core.learn.dynamic_sampling``.
    """

    enabled: bool = False
    max_rounds: int = attrs.field(default=3, validator=_non_negative)
    min_std: float = attrs.field(default=0.0, validator=_non_negative_float)
    reward_terms: list[str] = attrs.field(factory=list)


@attrs.frozen
class TrainConfig:
    """``groups`` groups of ``group_size`` trials per iteration; each group faces one opponent from the same seed."""

    arena: str
    opponents: list[OpponentEntry]
    learners: list[LearnerConfig] = attrs.field(factory=lambda: [LearnerConfig()], validator=_some_learner)
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
    #: DAPO's dynamic sampling: replace groups whose trials all got the same reward (off by default).
    dynamic_sampling: DynamicSamplingConfig = attrs.field(factory=DynamicSamplingConfig)
    #: Trackers that get every metrics line (TRL's name): tensorboard, wandb, trackio, or none (core/learn/trackers.py).
    report_to: list[TrackerName] | TrackerName = attrs.field(
        factory=lambda: ["tensorboard"], converter=normalize_report_to
    )

    def after_load(self, source: str) -> None:
        """Every learner's ``options.NAME`` against plugin NAME's ``Settings`` (called by ``load_config``)."""
        from arena.core.host.plugins import check_plugin_options

        check_plugin_options(
            [(f"learners.{i}.options.", learner.plugins, learner.options) for i, learner in enumerate(self.learners)],
            source,
        )

    def __attrs_post_init__(self) -> None:
        from arena.core.learn.unseen import check_unseen  # unseen opponents stay out of the training pool

        check_unseen(self)
        if self.dynamic_sampling.enabled and self.group_size < 2:
            raise ValueError(
                f"dynamic_sampling needs group_size >= 2 (a group of {self.group_size} trial never has a reward spread)"
            )
