"""Hook specifications: the whole contract between the arena core and its plugins.

Read this file top to bottom to learn what a plugin can do. Hooks are grouped by phase and listed in the
order they fire. Every hook is called with keyword arguments; an implementation may accept any subset of
the arguments (pluggy matches them by name). Records are frozen attrs classes from ``arena.core.api.records``:
return new ones rather than mutating what you are given.

How results combine:

* **1:N** hooks call every enabled plugin, in the order the run's config lists them, and combine the non-None
  results as the docstring says.
* **firstresult** hooks stop at the first non-None result. Two enabled plugins of one learner that implement
  the same firstresult hook are a configuration error naming both (see ``arena.core.host.plugins``).

Order within one trial (pinned by ``tests/core/test_hook_order.py``)::

    trial_start
      episode_start                                   (for each episode)
        retrieve_memory -> pre_action -> post_step    (each LLM turn; post_step also for other seats)
      episode_end
      reflect -> store_memory                         (after each episode, for each LLM seat; last=True after
                                                       the final one, also after an early stop)
    trial_end

and per training batch: compute_rewards -> augment_group -> compute_returns -> compute_advantages ->
normalize_advantages -> training_view -> (trainer) shape_token_advantages.

The registration hooks run once per process over every *installed* plugin; the others only for plugins a
run enables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from arena.core.api.augment import Augmentation, GroupTask
from arena.core.api.backend import ChatMessage
from arena.core.api.markers import hookspec
from arena.core.api.records import (
    ActionPlan,
    EpisodeRecord,
    MemoryItem,
    Reflection,
    ReflectionRequest,
    Step,
    TrialRecord,
    TrialSpec,
    Turn,
)
from arena.core.api.samples import Sample

# --------------------------------------------------------------------------------------------------------------
# Registration (every installed plugin, once per process)
# --------------------------------------------------------------------------------------------------------------


@hookspec
def register_arenas(register: Callable[..., None]) -> None:
    """Add arenas to the catalogue.

    Call ``register(arena_id: str, factory, description="", source="")`` once per arena, where
    ``factory(**kwargs)`` returns a fresh PettingZoo env (``AECEnv`` or ``ParallelEnv``) and ``kwargs`` are the
    arena's options from the config. Two plugins registering one id is an error naming both.
    Give the env readable text by setting ``env.unwrapped.arena_text_adapter`` to a
    ``arena.core.api.arena.TextAdapter``; otherwise the generic renderer is used (Discrete action space needed).
    Results: ignored.
    """


@hookspec
def register_opponents(register: Callable[..., None]) -> None:
    """Add programmatic opponents (scripted, search, solver based).

    Call ``register(opponent_id: str, factory, arenas=None, description="")``. A seat spec
    ``opponent_id[:arg]`` becomes ``factory(arena_id=..., arg=..., seed=...)``, which returns an
    ``arena.core.api.arena.Opponent``. ``arenas`` lists the arena ids it supports (None: any).
    Results: ignored.
    """


@hookspec
def register_backends(register: Callable[..., None]) -> None:
    """Add generation backends.

    Call ``register(name: str, factory, description="")`` where ``factory(model: str, **options)`` returns an
    ``arena.core.api.backend.Backend``. Seat spec ``model:NAME@BACKEND`` picks one. Results: ignored.
    """


@hookspec
def register_models(register: Callable[..., None]) -> None:
    """Add named models (``model:NAME``) that need no download.

    Call ``register(name: str, resolver, default_backend="hf", description="")`` where ``resolver()`` returns
    the local path (or hub id) the backend loads, building or caching it first if needed. Results: ignored.
    """


@hookspec
def register_commands(cli: Any) -> None:
    """Add sub-commands to the ``arena`` command line; ``cli`` is the root ``click.Group``.

    Results: ignored.
    """


# --------------------------------------------------------------------------------------------------------------
# A trial (enabled plugins only; called by the rollout engine, arena.core.rollout.engine)
# --------------------------------------------------------------------------------------------------------------


@hookspec
def trial_start(trial: TrialSpec) -> None:
    """Before the first episode of ``trial``. Results: ignored."""


@hookspec
def episode_start(trial: TrialSpec, episode: int) -> None:
    """After the arena is reset (from ``trial.seed``) for episode ``episode`` (0-based). Results: ignored."""


@hookspec
def retrieve_memory(turn: Turn) -> list[MemoryItem] | None:
    """Before each LLM turn: text the prompt should carry (earlier reflections, retrieved tips).

    Results: the lists of all plugins are concatenated, grouped by ``MemoryItem.section`` (sections in
    first-seen order) and ranked by ``score`` (highest first) within each section.
    """


@hookspec
def pre_action(turn: Turn) -> ActionPlan | None:
    """Before each LLM turn, after ``retrieve_memory``: extra instructions and the sampling plan.

    Results: ``instructions`` are appended in plugin order; at most one plugin may set ``segments`` or
    ``max_new_tokens`` (two that do raise an error naming both). The plans are kept on the turn's record.
    """


@hookspec
def post_step(trial: TrialSpec, step: Step) -> None:
    """After each decision of any seat has been applied to the arena (or was judged invalid).

    Results: ignored.
    """


@hookspec
def episode_end(trial: TrialSpec, episode: EpisodeRecord) -> None:
    """After an episode ends, before any reflection. Results: ignored."""


@hookspec
def reflect(
    trial: TrialSpec,
    episode: EpisodeRecord,
    agent: str,
    seat: int,
    reflections: tuple[Reflection, ...],
    last: bool,
) -> ReflectionRequest | None:
    """After every episode of a trial, once per LLM seat.

    ``last`` is True after the trial's final episode (the last of ``trial.episodes``, or the one that ended the
    trial early on a win): nothing of this trial follows, so only plugins that learn across trials (EMPO² tips)
    ask for something then; in-trial reflections (MAGE's ``<remark>``) return None. ``reflections`` holds this
    trial's earlier reflections. Return a ``ReflectionRequest`` to have the policy write something. Results:
    every request is generated, batched with all other pending generations; each result reaches
    ``store_memory`` and the trial record.
    """


@hookspec
def store_memory(trial: TrialSpec, reflection: Reflection) -> None:
    """After a requested reflection was generated; plugins keep what they need. Results: ignored."""


@hookspec
def trial_end(trial: TrialRecord) -> None:
    """After the last episode (and the trial's reflections). Results: ignored."""


# --------------------------------------------------------------------------------------------------------------
# Learning (called by the trainer, per learner)
# --------------------------------------------------------------------------------------------------------------


@hookspec
def compute_rewards(trial: TrialRecord, samples: list[Sample]) -> dict[int, dict[str, float]] | None:
    """After a trial is turned into samples: named reward terms (penalties, HeRL bonus, EMPO² novelty).

    Return ``{sample_index: {term_name: value}}``. Results: terms of all plugins are merged; the same term
    name from two plugins is an error. The return of a sample is computed from the sum of its terms.
    """


@hookspec
def augment_group(
    group: tuple[Sample, ...], task: GroupTask, options: Mapping[str, Mapping[str, Any]]
) -> Augmentation | None:
    """After ``compute_rewards``, per group: plan extra generations for it (HeRL revisions, GOLF refinements).

    ``group`` holds the ``action`` samples of one episode of the trials sharing a ``group_id``, one per trial
    (groups whose trials took several turns are not offered); ``task`` says how to rebuild the arena at that
    task. Return an ``arena.core.api.augment.Augmentation``: its ``requests`` of every group and every plugin are
    generated in one batch by the learner's backend, each completion is scored by the arena as an answer to the
    task, and then ``finish(group, answers)`` returns the group to train (slots replaced, reward terms added) and
    extra samples that form groups of their own. Results: applied in plugin order, each ``finish`` receiving
    the group as the previous one left it.
    """


@hookspec(firstresult=True)
def compute_returns(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float] | None:
    """After ``compute_rewards``, before advantages: the return of every sample (stored as ``Sample.ret``).

    The default (no plugin answers) is the sum of each sample's reward terms. MAGE answers with its
    differential, γ_step/γ_traj-discounted returns across the episodes of a trial. firstresult.
    """


@hookspec(firstresult=True)
def compute_advantages(
    samples: list[Sample], options: Mapping[str, Mapping[str, Any]]
) -> list[float | list[float]] | None:
    """After rewards and returns: one advantage per sample (GRPO, GiGPO, RLOO, RAE, MAGE, MENTOR).

    An advantage is a float (every completion token gets it) or a list with one value per completion token
    (RAE puts a turn's advantage on its last token). Called exactly once per training batch (RAE keeps state).

    ``options`` maps plugin names to the learner's settings for them (``options["grpo"]["std_norm"]``).
    firstresult: exactly one estimator per learner.
    """


@hookspec(firstresult=True)
def normalize_advantages(
    samples: list[Sample], advantages: list[float | list[float]], options: Mapping[str, Mapping[str, Any]]
) -> list[float | list[float]] | None:
    """After ``compute_advantages``: rescale (per-opponent groups, std on/off, RAE baselines).

    firstresult; when no plugin answers the advantages are used as they are.
    """


@hookspec(firstresult=True)
def training_view(sample: Sample, encode: Callable[[Sequence[ChatMessage]], tuple[int, ...]]) -> Sample | None:
    """Before the loss: the context the trainer conditions on, when it differs from the rollout's.

    ``encode(messages)`` renders chat messages exactly as the learner's backend did for the rollout (chat
    template plus generation prompt) and returns the token ids; ``sample.context_messages`` are the rollout's
    messages. A view that changes the context sets ``context_ids``/``context_text``/``context_messages`` to the
    new ones and ``rollout_context_ids``/``rollout_context_text`` to the old ones; the behaviour log-probs stay
    (they are the old policy's, in the rollout context). EMPO² strips ``<tip>`` blocks here.
    firstresult; None keeps the rollout context.
    """


@hookspec(firstresult=True)
def shape_token_advantages(
    samples: Sequence[Sample], advantages: Any, entropy: Any, mask: Any, options: Mapping[str, Mapping[str, Any]]
) -> Any:
    """Inside the loss, once per micro-batch: per-token advantages that depend on the current policy.

    ``advantages``, ``entropy`` and ``mask`` are ``[B, T]`` torch tensors for the micro-batch ``samples``:
    ``entropy`` is the policy's entropy at each completion position (at the token's sampling temperature),
    detached; ``mask`` is 1 on completion tokens. Return a new ``[B, T]`` advantage tensor (EntropyAdv adds
    min(α·H, |A|/κ)). firstresult; None keeps the advantages.
    """


# --------------------------------------------------------------------------------------------------------------
# Population (called by the population manager, arena.populations)
# --------------------------------------------------------------------------------------------------------------


@hookspec(firstresult=True)
def select_matchups(population: Any, iteration: int) -> list[Any] | None:
    """At the start of an iteration: the groups of trials to play (learner, opponent, seeds).

    firstresult; the default matchmaker answers when no plugin does.
    """


@hookspec
def match_end(trial: TrialRecord) -> None:
    """After every trial of a population run, for ratings and opponent statistics. Results: ignored."""


@hookspec
def evolve_population(population: Any, iteration: int) -> None:
    """After an iteration's updates: add snapshots, reweight opponents (fictitious self-play, PFSP).

    Results: ignored.
    """
