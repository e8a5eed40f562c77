"""mentor: expert guidance at critical tokens (MENTOR, arXiv 2510.04140; code github.com/Jiangzs1028/MENTOR).

Each group of G = ``on_policy + mixed`` rollouts of one task has ``on_policy`` ordinary rollouts and ``mixed``
rollouts sampled from a token-level mixture of the policy and an expert model that shares its tokenizer::

    π_mix(·|s_t) = (1 − w_t)·π_θ(·|s_t) + w_t·π_E(·|s_t),      w_t = min(1, H_t / γ)

where ``H_t`` is the policy's next-token entropy: the expert steps in where the policy is unsure (the "critical
tokens") and leaves confident tokens alone. γ is the ``gamma_percentile`` (95th) percentile of the policy's token
entropies on the on-policy rollouts of the previous iteration, floored at ``gamma_floor`` (1.5).

Hooks:

* ``pre_action`` (training trials of a training run): the trial's position in its group
  (``TrialSpec.meta["group_index"]``, set by the core) decides its role; the first ``on_policy`` trials are
  on-policy, the others mixed. A mixed trial's turns get one guided segment, ``Segment(temperature, top_p,
  guide=Guide(expert, γ))``, which the ``hf`` backend samples from π_mix and whose behaviour log-probs are
  ``log π_mix`` (the distribution actually sampled from; other backends refuse guided segments).
  ``ActionPlan.meta`` says what happened: ``{"mixed", "guided", "gamma", "alpha", "iteration", "group_index"}``;
  it reaches ``Sample.meta["plans"]["mentor"]`` and the rollout dumps.
* ``trial_end``: collects ``Completion.entropies`` of the learner's action tokens in on-policy trials, per learner
  (``TrialSpec.meta["learner"]``) and iteration. At the first turn of iteration k, γ_k = max(percentile(tokens of
  the latest earlier iteration), gamma_floor). A backend that reports no entropies leaves γ at the floor.
* ``compute_advantages`` (the learner's estimator; do not enable ``grpo`` with it). Per group (``group_id``),
  with mean_on and std_on the return statistics of the group's non-mixed samples::

      on-policy (and reflection) samples:  A = (R − mean_on) / (std_on + eps)      (std_norm = false: R − mean_on)
      mixed samples:                       A = α · max(R − mean_on, 0)          never negative

  α cosine-decays from ``alpha_start`` at iteration 0 to 0 at iteration ``decay_iterations``:
  α_k = alpha_start · ½ (1 + cos(π k / decay_iterations)), and 0 from then on. From iteration
  ``decay_iterations`` on no trial is mixed: all G rollouts are on-policy, unguided, and get the z-score.
  As in the authors' code, a group's mixed advantages (before α) are scaled down to sum to ``expert_cap`` when
  they sum to more.
* ``state_dict``/``load_state_dict``: the collected entropies (JSON), so a resumed run keeps its γ.

| setting | default | meaning |
| --- | --- | --- |
| ``expert`` | (required) | the expert's model spec: ``model:NAME``, a registered name, a checkpoint directory |
| ``on_policy`` | ``4`` | on-policy rollouts per group (the first ones) |
| ``mixed`` | ``4`` | mixed rollouts per group; ``group_size`` must equal ``on_policy + mixed`` |
| ``gamma_floor`` | ``1.5`` | lower bound of γ (nats); also γ when no entropies were reported |
| ``gamma_percentile`` | ``95.0`` | percentile of the previous iteration's on-policy token entropies |
| ``alpha_start`` | ``1.0`` | α at iteration 0 |
| ``decay_iterations`` | ``120`` | iterations over which α decays to 0; mixed rollouts stop then |
| ``expert_cap`` | ``99.0`` | cap on a group's summed mixed advantages before α (the code's ``expert_cap``) |
| ``temperature`` | ``0.0`` | temperature of the guided segment; 0: the turn's own (``trial.prompt.temperature``) |
| ``top_p`` | ``0.0`` | top-p of the guided segment; 0: the turn's own (``trial.prompt.top_p``) |
| ``std_norm`` | ``true`` | divide on-policy advantages by the on-policy std (as GRPO's switch) |
| ``eps`` | ``1e-6`` | added to that std |
| ``unbiased_std`` | ``true`` | Bessel-corrected std, as ``grpo`` |
| ``old_logprobs`` | ``"policy"`` | guided tokens' π_old: ``policy`` (recomputed, [C]) or ``mixture`` (ablation) |

Decisions and differences from the paper and its code:

* **Iteration 0** has no previous batch, so no γ: its mixed-half trials are sampled on-policy (no guide,
  ``meta.guided = false``) but still count as mixed (``meta.mixed = true``) and get the positive-only mixed
  advantage. This follows the code, whose first step runs the mixed rollouts with γ = 999 (w ≈ 0) and flags them
  as expert rollouts. The same holds for any iteration without an earlier batch in the plugin's state.
* **Iterations** count from 0 here (α_0 = 1); the code's ``global_step`` starts at 1.
* **After the decay** the code stops generating mixed rollouts and its groups shrink to ``on_policy`` samples;
  here the group size is fixed by the run, so all G trials become on-policy.
* **Sampling** is direct mixing in the ``hf`` backend rather than the code's speculative decoding (policy drafts,
  expert verifies in vLLM); both draw from π_mix. Each model's distribution is taken at the segment's temperature
  after its own top-p nucleus, then mixed; ``H_t`` is the entropy of the policy's sampling distribution, as in the
  code (entropy of vLLM's draft probabilities).
* **Old log-probs** (``old_logprobs: policy``, the default since issue 22): as in the code, π_old of a guided
  turn is recomputed by the policy before the update (``ActionPlan.recompute_old`` → ``Sample.recompute_old``,
  whatever ``loss.old_logprobs`` says), so the PPO ratio of a mixed token starts at 1 and an expert-chosen token
  the policy finds unlikely gets its full gradient. Until issue 22 the trainer used the behaviour log-probs,
  ``log π_mix``: the ratio π_θ/π_mix at such a token is far below 1, which scaled its gradient down and, for
  negative advantages, clipped it. ``old_logprobs: mixture`` keeps that as an ablation.
* **γ** uses the entropies recorded while sampling (``Completion.entropies``) rather than a recomputation before
  the update; the policy is the same, so the values agree up to the top-p truncation (none at top-p 1). Only
  the learner's action tokens count (not reflections).
* **Sampling plan**: the guided segment replaces the engine's default one and copies its temperature and top-p
  (``Turn.default_segment``) unless ``temperature``/``top_p`` are set; another plugin that sets ``segments``
  (SGE) cannot be combined with ``mentor``.
* Outside a training run (no ``group_index``/``iteration`` in the trial's meta, or ``training`` false) the
  plugin plans nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import attrs
import numpy as np

from arena.core import (
    ActionPlan,
    ConfigError,
    Guide,
    Sample,
    Segment,
    TrialRecord,
    TrialSpec,
    Turn,
    group_members,
    hookimpl,
    read_settings,
    setting,
)

NAME = "mentor"
STATE_VERSION = 1

_ge = attrs.validators.ge
_gt = attrs.validators.gt


@attrs.frozen
class Settings:
    """mentor's settings: ``options.mentor`` of a learner (checked when the run config loads; ``expert`` is
    required by the hooks that guide rollouts, see :func:`settings`)."""

    expert: str = setting("", "the expert's model spec: model:NAME, a registered name, a checkpoint directory")
    on_policy: int = setting(
        4,
        "on-policy rollouts per group (the first ones; at least 2: their mean and std are the baseline)",
        validator=_ge(2),
    )
    mixed: int = setting(4, "mixed rollouts per group; group_size must equal on_policy + mixed", validator=_ge(0))
    gamma_floor: float = setting(
        1.5, "lower bound of γ (nats); also γ when no entropies were reported", validator=_gt(0.0)
    )
    gamma_percentile: float = setting(
        95.0,
        "percentile of the previous iteration's on-policy token entropies",
        validator=attrs.validators.and_(_ge(0.0), attrs.validators.le(100.0)),
    )
    alpha_start: float = setting(1.0, "α at iteration 0", validator=_ge(0.0))
    decay_iterations: int = setting(
        120, "iterations over which α decays to 0; mixed rollouts stop then", validator=_ge(1)
    )
    expert_cap: float = setting(
        99.0, "cap on a group's summed mixed advantages before α (the code's expert_cap)", validator=_gt(0.0)
    )
    temperature: float = setting(
        0.0, "temperature of the guided segment; 0: the turn's own (trial.prompt.temperature)", validator=_ge(0.0)
    )
    top_p: float = setting(
        0.0,
        "top-p of the guided segment; 0: the turn's own (trial.prompt.top_p)",
        validator=attrs.validators.and_(_ge(0.0), attrs.validators.le(1.0)),
    )
    std_norm: bool = setting(True, "divide on-policy advantages by the on-policy std (as GRPO's switch)")
    eps: float = setting(1e-6, "added to that std")
    unbiased_std: bool = setting(True, "Bessel-corrected std, as grpo")
    old_logprobs: Literal["policy", "mixture"] = setting(
        "policy", "guided tokens' π_old: policy (recomputed, [C]) or mixture (ablation)"
    )


def settings(options: Mapping[str, Mapping[str, Any]] | None, need_expert: bool = True) -> Settings:
    """``options["mentor"]`` read into :class:`Settings`; with ``need_expert`` an empty ``expert`` raises too (the
    advantage hook needs none, the hooks that guide rollouts do)."""
    opts = read_settings(options, NAME, Settings)
    if need_expert and not opts.expert:
        raise ConfigError(f"plugin {NAME!r}: set 'expert' to the expert's model spec (e.g. 'model:tiny' or a path)")
    return opts


# --------------------------------------------------------------------------------------------------------------
# The pieces, as plain functions
# --------------------------------------------------------------------------------------------------------------


def alpha_at(iteration: int, alpha_start: float = 1.0, decay_iterations: int = 120) -> float:
    """α_k = alpha_start · ½ (1 + cos(π k / decay_iterations)) for k < decay_iterations, else 0."""
    if iteration >= decay_iterations:
        return 0.0
    return alpha_start * 0.5 * (1.0 + math.cos(math.pi * iteration / decay_iterations))


def gamma_from(entropies: list[float], floor: float = 1.5, percentile: float = 95.0) -> float:
    """max(percentile of ``entropies`` (linear interpolation, as ``torch.quantile``), floor); floor when empty."""
    if not entropies:
        return floor
    return max(float(np.percentile(np.asarray(entropies, dtype=np.float64), percentile)), floor)


def mentor_advantages(
    returns: list[float],
    groups: list[str],
    mixed: list[bool],
    alphas: list[float],
    std_norm: bool = True,
    eps: float = 1e-6,
    unbiased_std: bool = True,
    expert_cap: float = 99.0,
) -> list[float]:
    """MENTOR's advantages, one per sample (see the module docstring).

    ``mixed[i]`` marks the samples of mixed rollouts, ``alphas[i]`` their α. The baseline of a group is its
    non-mixed samples; with fewer than two of them the z-score is 0 (GRPO's singleton rule), and with none the
    mixed samples get 0 too (nothing to compare with).
    """
    if not len(returns) == len(groups) == len(mixed) == len(alphas):
        raise ValueError("returns, groups, mixed and alphas must have one entry per sample")
    out = [0.0] * len(returns)
    for idx in group_members(groups).values():
        on = [i for i in idx if not mixed[i]]
        off = [i for i in idx if mixed[i]]
        if not on:
            continue
        values = [float(returns[i]) for i in on]
        mean = sum(values) / len(values)
        if len(on) >= 2:
            scale = 1.0
            if std_norm:
                var = sum((v - mean) ** 2 for v in values) / (len(values) - 1 if unbiased_std else len(values))
                scale = math.sqrt(var) + eps
            for i, v in zip(on, values, strict=True):
                out[i] = (v - mean) / scale
        gains = [max(float(returns[i]) - mean, 0.0) for i in off]
        total = sum(gains)
        if total > expert_cap:
            gains = [g / total * expert_cap for g in gains]
        for i, g in zip(off, gains, strict=True):
            out[i] = float(alphas[i]) * g
    return out


def _int_meta(spec: TrialSpec, key: str) -> int | None:
    value = spec.meta.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def is_mixed_trial(spec: TrialSpec, opts: Settings) -> bool | None:
    """Whether a trial is one of its group's mixed rollouts; None outside a training run (nothing to plan)."""
    group_index, iteration = _int_meta(spec, "group_index"), _int_meta(spec, "iteration")
    if not spec.training or group_index is None or iteration is None:
        return None
    size = opts.on_policy + opts.mixed
    if group_index >= size:
        raise ConfigError(
            f"plugin {NAME!r}: trial {spec.trial_id!r} is number {group_index + 1} of its group, but MENTOR's groups "
            f"are on_policy + mixed = {size}; set group_size to {size}"
        )
    alpha = alpha_at(iteration, opts.alpha_start, opts.decay_iterations)
    return group_index >= opts.on_policy and alpha > 0


# --------------------------------------------------------------------------------------------------------------
# The plugin
# --------------------------------------------------------------------------------------------------------------


@attrs.define
class _LearnerState:
    """One learner's on-policy token entropies per iteration (only the latest iterations are kept)."""

    batches: dict[int, list[float]] = attrs.field(factory=dict)


class Mentor:
    """The stateful plugin: per learner, the entropies that set γ; per group, the sizes seen (to check G)."""

    #: The config check and ``arena plugins`` find the settings here (the entry point names the class).
    Settings: TypeAlias = Settings

    def __init__(self) -> None:
        self.learners: dict[str, _LearnerState] = {}
        #: Per group id: the group indices of the trials that ended (compute_advantages checks G with them).
        self._group_sizes: dict[str, int] = {}

    # -- γ ----------------------------------------------------------------------------------------------------

    def gamma(self, learner: str, iteration: int, opts: Settings) -> float | None:
        """γ for ``iteration``: from the latest earlier iteration's on-policy entropies; None if there is none."""
        state = self.learners.get(learner)
        earlier = [k for k in (state.batches if state else {}) if k < iteration]
        if state is None or not earlier:
            return None
        latest = max(earlier)
        for k in [k for k in state.batches if k < latest]:
            del state.batches[k]  # older batches can never be "the previous one" again
        return gamma_from(state.batches[latest], opts.gamma_floor, opts.gamma_percentile)

    # -- hooks -----------------------------------------------------------------------------------------------

    @hookimpl
    def pre_action(self, turn: Turn) -> ActionPlan | None:
        spec = turn.trial
        opts = settings(spec.options)
        mixed = is_mixed_trial(spec, opts)
        if mixed is None:
            return None
        iteration = _int_meta(spec, "iteration")
        assert iteration is not None
        alpha = alpha_at(iteration, opts.alpha_start, opts.decay_iterations)
        meta: dict[str, Any] = {
            "mixed": mixed,
            "guided": False,
            "gamma": None,
            "alpha": alpha,
            "iteration": iteration,
            "group_index": spec.meta["group_index"],
        }
        if not mixed:
            return ActionPlan(source=NAME, meta=meta)
        gamma = self.gamma(str(spec.meta.get("learner", "")), iteration, opts)
        if gamma is None:  # no previous batch: sampled on-policy, still counted as mixed (see the module doc)
            return ActionPlan(source=NAME, meta=meta)
        meta.update(guided=True, gamma=gamma)
        default = turn.default_segment or Segment()
        segment = Segment(
            temperature=opts.temperature or default.temperature,
            top_p=opts.top_p or default.top_p,
            guide=Guide(opts.expert, gamma),
        )
        # π_old of the guided tokens is the policy's, recomputed before the update (the code): against log π_mix
        # the first-step ratio π_θ/π_mix of an expert-chosen token is far below 1, which scales its gradient down
        # (and clips the tokens the policy already likes), muting what MENTOR exists to teach.
        recompute = opts.old_logprobs == "policy"
        return ActionPlan(segments=(segment,), source=NAME, meta=meta, recompute_old=recompute)

    @hookimpl
    def trial_end(self, trial: TrialRecord) -> None:
        spec = trial.spec
        opts = settings(spec.options)
        mixed = is_mixed_trial(spec, opts)
        if mixed is None:
            return
        group_index = _int_meta(spec, "group_index")
        assert group_index is not None
        group = spec.group_id or spec.trial_id
        self._group_sizes[group] = max(self._group_sizes.get(group, 0), group_index + 1)
        if mixed:
            return
        iteration = _int_meta(spec, "iteration")
        assert iteration is not None
        learner_seat = _int_meta(spec, "learner_seat")
        batch = self.learners.setdefault(str(spec.meta.get("learner", "")), _LearnerState()).batches
        tokens = batch.setdefault(iteration, [])
        for episode in trial.episodes:
            for step in episode.steps:
                if step.completion is None or (learner_seat is not None and step.seat != learner_seat):
                    continue
                tokens.extend(float(h) for h in step.completion.entropies)

    @hookimpl
    def compute_advantages(self, samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
        opts = settings(options, need_expert=False)
        size = opts.on_policy + opts.mixed
        for group in {s.group_id for s in samples}:
            seen = self._group_sizes.pop(group, None)
            if seen is not None and seen != size:
                raise ConfigError(
                    f"plugin {NAME!r}: group {group!r} has {seen} trials but on_policy + mixed = {size}; "
                    f"set group_size to {size}"
                )
        plans = [s.meta.get("plans", {}).get(NAME, {}) for s in samples]
        return mentor_advantages(
            [s.ret for s in samples],
            [s.group_id for s in samples],
            [bool(p.get("mixed", False)) for p in plans],
            [float(p.get("alpha", 0.0)) for p in plans],
            std_norm=opts.std_norm,
            eps=opts.eps,
            unbiased_std=opts.unbiased_std,
            expert_cap=opts.expert_cap,
        )

    # -- state -----------------------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The kept entropy batches per learner, as plain JSON data, for the trainer's checkpoint."""
        return {
            "version": STATE_VERSION,
            "learners": {
                name: {str(k): list(v) for k, v in sorted(state.batches.items())}
                for name, state in sorted(self.learners.items())
            },
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the entropy batches with those of ``state`` (from :meth:`state_dict`)."""
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"MENTOR state version {state.get('version')!r}; this plugin reads version {STATE_VERSION}"
            )
        self.learners = {
            str(name): _LearnerState({int(k): [float(h) for h in v] for k, v in batches.items()})
            for name, batches in state.get("learners", {}).items()
        }
        self._group_sizes.clear()
