"""The unit of learning: one LLM turn of a learner (an action, a reflection, a tip, a revision...).

Samples are frozen; every stage (rewards, returns, advantages, training view) returns new ones with
``attrs.evolve``. ``context_ids`` is what the trainer conditions on; ``rollout_context_ids`` is what the policy
saw when it sampled (they differ when a plugin changes the training view, as EMPO² strips its tips), and
``behaviour_logprobs`` were measured in the rollout context at ``temperatures``.

PPO's π_old is the behaviour log-probs unless the trainer recomputes it (``loss.old_logprobs: recompute`` for
``ppo`` samples, and always for a sample with ``recompute_old``): then a no-grad pass of the trained model
before the update gives it, in the training context, or in the rollout context for ``old_context="rollout"``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from arena.core.api.backend import ChatMessage

#: A sample's loss: the built-in kinds below, or any kind a plugin adds with ``register_loss`` (arena.core), so a
#: str rather than a closed Literal; the trainer refuses a kind nobody registered.
LossKind = str
BUILTIN_LOSS_KINDS = ("ppo", "shaped_ratio", "shaped_prob", "sft", "dpo_chosen", "dpo_rejected")


@attrs.frozen
class Sample:
    learner: str
    trial_id: str
    episode: int
    turn: int
    agent: str
    kind: str
    context_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    behaviour_logprobs: tuple[float, ...]
    temperatures: tuple[float, ...]
    context_text: str = ""
    completion_text: str = ""
    rollout_context_ids: tuple[int, ...] | None = None
    rollout_context_text: str | None = None
    #: The chat messages the context was rendered from (``training_view`` re-renders edited ones).
    context_messages: tuple[ChatMessage, ...] = ()
    loss: LossKind = "ppo"
    group_id: str = ""
    anchor: str | None = None
    opponent: str | None = None
    reward_terms: dict[str, float] = attrs.field(factory=dict)
    ret: float = 0.0
    advantage: float | list[float] = 0.0
    meta: dict[str, Any] = attrs.field(factory=dict)
    #: π_old must come from the trained model, not the sampler: the tokens were drawn from another distribution
    #: (MENTOR's policy/expert mixture; a HeRL revision sampled at T 0.3 in another prompt), so their behaviour
    #: log-probs would make the first-step ratio far from 1. The trainer recomputes π_old for such a sample
    #: whatever ``loss.old_logprobs`` says.
    recompute_old: bool = False
    #: The context a recomputed π_old is taken in: ``train`` (``context_ids``) or ``rollout``
    #: (``rollout_context_ids``, the prompt the tokens were sampled in: EMPO²'s off-policy ratio
    #: π_θ(a | no tips) / π_old(a | tips) keeps its tips in the denominator).
    old_context: Literal["train", "rollout"] = "train"

    def __attrs_post_init__(self) -> None:
        n = len(self.completion_ids)
        if len(self.behaviour_logprobs) != n or len(self.temperatures) != n:
            raise ValueError(
                f"sample of trial {self.trial_id!r}: {n} completion tokens but {len(self.behaviour_logprobs)} "
                f"log-probs and {len(self.temperatures)} temperatures"
            )

    @property
    def reward(self) -> float:
        """The sum of the named reward terms."""
        return float(sum(self.reward_terms.values()))
