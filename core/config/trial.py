"""Config sections shared by every command that plays trials (``arena play`` now, ``arena train`` later)."""

from __future__ import annotations

from typing import Any, Literal

import attrs


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be at least 1, got {value}")


def _non_negative(instance: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must be at least 0, got {value}")


@attrs.frozen
class InvalidActionConfig:
    """What happens when an LLM seat's answer does not parse to a legal move.

    ``forfeit`` (default, as SPIRAL): the episode ends, the offender gets ``offender_reward`` (−1.5) and every
    other seat ``other_reward`` (+0.5). ``retry``: re-prompt up to ``retries`` times, then forfeit.
    ``random``: play a uniformly random legal move and record ``penalty`` on the step (MAGE's reading).
    Every invalid answer is counted.
    """

    policy: Literal["forfeit", "retry", "random"] = "forfeit"
    retries: int = attrs.field(default=2, validator=_non_negative)
    offender_reward: float = -1.5
    other_reward: float = 0.5
    penalty: float = 0.5


@attrs.frozen
class PromptConfig:
    """The default turn prompt: how much of the current episode it shows and how the model samples."""

    history_steps: int = attrs.field(default=7, validator=_non_negative)
    full_observation_steps: int = attrs.field(default=2, validator=_non_negative)
    max_new_tokens: int = attrs.field(default=256, validator=_positive)
    temperature: float = 1.0
    top_p: float = 1.0
    system: str = ""

    def __attrs_post_init__(self) -> None:
        if not 0 <= self.temperature < float("inf"):  # NaN fails too
            raise ValueError(f"temperature must be a finite number of at least 0 (0: greedy), got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")


@attrs.frozen
class TrialConfig:
    """How each trial runs: ``episodes`` restarts of the arena from the same seed, reflections between."""

    episodes: int = attrs.field(default=1, validator=_positive)
    #: Stop a trial after an episode that every *trained* seat won (the learner's seat; a learner against an
    #: LLM opponent stops on its own win only, a learner against itself plays every episode). Evaluation
    #: always plays every episode.
    early_stop_on_win: bool = False
    max_steps: int = attrs.field(default=1000, validator=_positive)
    invalid_action: InvalidActionConfig = attrs.field(factory=InvalidActionConfig)
    prompt: PromptConfig = attrs.field(factory=PromptConfig)


@attrs.frozen
class PlayConfig:
    """``arena play``: ``games`` trials of ``arena`` with ``seats`` in seat order."""

    arena: str
    seats: list[str]
    games: int = attrs.field(default=100, validator=_positive)
    seed: int = 0
    arena_kwargs: dict[str, Any] = attrs.field(factory=dict)
    plugins: list[str] = attrs.field(factory=lambda: ["reflection"])
    #: Settings of the enabled plugins, plugin name → settings dict (e.g. ``options.mage.memory=history_only``).
    options: dict[str, dict[str, Any]] = attrs.field(factory=dict)
    trial: TrialConfig = attrs.field(factory=TrialConfig)
    max_live_trials: int = attrs.field(default=256, validator=_positive)
