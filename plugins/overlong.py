"""overlong: DAPO's soft overlong punishment (Yu et al. 2025, arXiv 2503.14476, section 3.4, equation 13).

A completion cut off at the generation budget is punished for its length although its reasoning may be sound;
DAPO instead shapes the reward with a length-aware penalty that starts ``cache`` tokens before the budget
``max_length`` (L_max) and grows linearly to −1 at it::

    R_length(y) = 0                                   |y| ≤ L_max − L_cache
                = ((L_max − L_cache) − |y|) / L_cache   L_max − L_cache < |y| ≤ L_max
                = −1                                  L_max < |y|

added to the environment's reward as the reward term ``overlong`` = ``coef`` · R_length (DAPO: L_max 20480,
L_cache 4096, i.e. a fifth; its code's ``overlong_penalty_factor`` is ``coef``). ``|y|`` is the number of
completion tokens of the sample (``Sample.completion_ids``). Every targeted sample gets the term, 0 when short.

Defaults: ``max_length`` is the trial's answer budget (``trial.prompt.max_new_tokens``, which ``arena train`` puts
in ``TrialSpec.meta["max_new_tokens"]``); ``cache`` is ``max_length // 5``. Only ``action`` samples are shaped by
default: reflections and tips have budgets of their own (list their kinds, e.g. ``reflection:mage``, in ``kinds``
to shape them against the same ``max_length``). Samples added by ``augment_group`` (HeRL, GOLF) come after the
reward terms and are not shaped.

DAPO's other variant, *overlong filtering* (truncated samples left out of the loss), is a loss setting rather than
a reward term: ``loss: {overlong_filter: true}`` (``arena.core.learn.trainer.LossConfig``).

Hooks: ``compute_rewards``.

| setting | default | meaning |
| --- | --- | --- |
| ``max_length`` | the trial's ``max_new_tokens`` | L_max in tokens |
| ``cache`` | ``max_length // 5`` | L_cache in tokens, 0 ≤ cache ≤ max_length |
| ``coef`` | ``1.0`` | scale of the penalty (DAPO's ``overlong_penalty_factor``) |
| ``kinds`` | ``["action"]`` | sample kinds that are shaped |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from arena.core import ConfigError, Sample, TrialRecord, hookimpl, read_settings, setting

NAME = "overlong"
TERM = "overlong"
#: ``max_length`` and ``cache`` default to values that depend on the trial (None in ``Settings``), resolved by
#: :func:`settings` from the trial's ``max_new_tokens``.
LENGTH_KEYS = ("max_length", "cache")


@attrs.frozen
class Settings:
    """overlong's settings: ``options.overlong`` of a learner (checked when the run config loads; ``max_length``
    and ``cache`` left at None are the trial's ``max_new_tokens`` and ``max_length // 5``)."""

    max_length: int | None = setting(
        None,
        "L_max in tokens; None: the trial's max_new_tokens",
        validator=attrs.validators.optional(attrs.validators.ge(1)),
    )
    cache: int | None = setting(
        None,
        "L_cache in tokens, 0 ≤ cache ≤ max_length; None: max_length // 5",
        validator=attrs.validators.optional(attrs.validators.ge(0)),
    )
    coef: float = setting(1.0, "scale of the penalty (DAPO's overlong_penalty_factor)")
    kinds: tuple[str, ...] = setting(("action",), "sample kinds that are shaped")

    def __attrs_post_init__(self) -> None:
        if self.max_length is not None and self.cache is not None and self.cache > self.max_length:
            raise ValueError(f"cache must be between 0 and max_length ({self.max_length}), got {self.cache}")


def soft_overlong_penalty(length: int, max_length: int, cache: int) -> float:
    """DAPO's R_length for a completion of ``length`` tokens: 0, then linear down to −1 at ``max_length``, then −1."""
    if not 0 <= cache <= max_length:
        raise ValueError(f"cache must be between 0 and max_length ({max_length}), got {cache}")
    expected = max_length - cache
    if length <= expected:
        return 0.0
    if length <= max_length:
        return (expected - length) / cache  # cache > 0 here: expected < length <= max_length
    return -1.0


def lengths(opts: Settings, trial_max_new_tokens: Any = None) -> tuple[int, int]:
    """``(max_length, cache)`` of ``opts`` with the trial's defaults filled in (``trial_max_new_tokens``: L_max)."""
    max_length = opts.max_length if opts.max_length is not None else trial_max_new_tokens
    if max_length is None:
        raise ConfigError(
            f"plugin {NAME!r}: set options.{NAME}.max_length (L_max in tokens); this trial does not say its "
            "max_new_tokens"
        )
    if not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 1:
        raise ConfigError(f"plugin {NAME!r}: max_length must be a positive int, got {max_length!r}")
    cache = opts.cache if opts.cache is not None else max_length // 5
    if not 0 <= cache <= max_length:
        raise ConfigError(f"plugin {NAME!r}: cache must be between 0 and max_length ({max_length}), got {cache}")
    return max_length, cache


def settings(options: Mapping[str, Mapping[str, Any]] | None, trial_max_new_tokens: Any = None) -> Settings:
    """The settings with ``max_length`` and ``cache`` resolved (``trial_max_new_tokens``: the default L_max)."""
    opts = read_settings(options, NAME, Settings)
    max_length, cache = lengths(opts, trial_max_new_tokens)
    return attrs.evolve(opts, max_length=max_length, cache=cache)


@hookimpl
def compute_rewards(trial: TrialRecord, samples: list[Sample]) -> dict[int, dict[str, float]]:
    opts = read_settings(trial.spec.options, NAME, Settings)
    max_length, cache = lengths(opts, trial.spec.meta.get("max_new_tokens"))
    kinds = set(opts.kinds)
    return {
        i: {TERM: opts.coef * soft_overlong_penalty(len(s.completion_ids), max_length, cache)}
        for i, s in enumerate(samples)
        if s.kind in kinds
    }
