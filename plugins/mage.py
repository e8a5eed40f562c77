"""mage: multi-episode meta-RL against a population of opponents (MAGE, arXiv 2603.03680; code Lu-Yang666/MAGE).

A *trial* is N episodes of one game against one opponent, every episode restarted from the same seed, with a
reflection turn between episodes; success over a trial is pass@k because a won trial stops early. The trial
loop itself belongs to the engine (``trial.episodes`` = 3, ``trial.early_stop_on_win`` = true in the run
config); this plugin adds what MAGE puts on top of it:

1. **Prompt composition.** After each episode that another follows, the policy writes a reflection answered
   inside ``<remark>…</remark>`` (cut to 2000 characters). Each later turn of the trial shows the earlier
   episodes as their reflections (``memory: reflection_only``), as their move transcripts (``history_only``: no
   reflection is requested) or both (``history_and_reflection``). The rest of the turn prompt (rules, episode
   k of N, the current episode's last 7 steps with full observations for the last 2, the answer format) is the
   engine's default prompt (``arena.core.rollout.prompts``, ``PromptConfig``).

2. **Differential reward and cross-episode returns.** With R(τ_n) the learner's return in episode n and
   R(τ_0) = 0 (episodes numbered from 1 here; ``Sample.episode`` counts from 0)::

       Δ_n = R(τ_n) − R(τ_{n−1})                    on the last step of episode n   (Σ_n Δ_n = R(τ_N))
       Δ_n = R(τ_n)                                 reward: cumulative  (the LaMer ablation)
       G_t = γ_step · G_{t+1}                       within an episode (no reward on the other steps)
       G_last(n) = Δ_n + γ_traj · G_first(n+1)      G_first(N+1) = 0
       G(reflection after episode n) = G_first(n+1)

   Episodes in which the learner seat never moved are skipped: Δ is taken against the previous episode the
   seat played, so the Δs still add up to the return of the last one.

3. **Penalties** as named reward terms (``compute_rewards``): ``invalid`` = −0.5 for every action turn whose
   answer was not a legal move (a turn rescued by a retry is not invalid); ``length`` =
   −c·min(1, (L − L_max/2)/(L_max/2)) when the completion's L tokens exceed half the response budget L_max, on
   actions and reflections alike (both are generated under that budget).

4. **Advantage** (GiGPO form, mean only)::

       A = [E_i − mean_{group} E] + w · [G_t − mean_{group, anchor} G]
       E_i = Δ_n + penalties                        action sample of episode n (penalty terms are negative)
       E_i = G(reflection) + penalties              reflection sample
       anchor = (observation text, opponent)        ``Sample.anchor``, shared by the episodes of a trial
       anchor = ("reflection", opponent)            every reflection of the group (the code's anchor)

   A group is the G trials of one matchup (``Sample.group_id``): it faces exactly one opponent, which is what
   the paper calls agent-specific advantage normalisation, so no ``normalize_advantages`` is needed. Means run
   over samples; a step group of one sample (an anchor no other turn of the group saw) gets 0 for the anchor
   bracket, and a group of one sample 0 for the episode bracket. ``std_norm`` divides each bracket by its
   std + ``eps``. Ablations: ``mixed_groups`` takes the episode baseline over the whole batch (mixing
   opponents; anchor groups stay per group), ``per_episode_anchors`` prefixes each anchor with its episode
   ("Trial k"; a reflection takes the episode that follows it), so turns of different episodes of a trial no
   longer share a step group. Reflections share one step group per group, as MAGE's code anchors them at
   ``"reflection" + opponent``: a reflection whose next episode did better than its group mates' gets a
   positive anchor bracket. ``reflection_anchor: false`` is the ablation that gives each reflection a step group
   of its own (anchor bracket 0), this plugin's behaviour before issue 22.

What the dumped rollouts show: ``reward_terms["env"]`` is the core's plain episodic return R(τ_n) (see
``arena.core.learn.experience``; for a reflection, the return of the episode after it) and is *not* what MAGE trains
on; ``invalid`` and ``length`` are this plugin's penalties; any other plugin's terms are added to E_i like the
penalties. ``return`` is G_t above (penalties are not discounted into it); ``advantage`` is A.

Settings come from the learner's ``options["mage"]``: ``compute_returns`` and ``compute_advantages`` get them
as an argument, the trial-phase hooks (``reflect``, ``retrieve_memory``, ``compute_rewards``) read them from
``TrialSpec.options["mage"]``, which whoever builds the trial specs must fill with the learner's options (a spec
without them runs these hooks with the defaults). Unknown keys are errors.

Enable ``mage`` alone for its learner: it answers ``compute_returns`` and ``compute_advantages``, so enabling
``grpo``/``gigpo``/... as well is a configuration error (both plugins are named), and it must not be combined
with the plain ``reflection`` plugin (both would reflect): the first reflection that plugin stores into a trial
makes ``mage`` fail with a message saying so. Set the learner's ``invalid_penalty`` to 0: ``mage`` adds its own.

Hooks: ``reflect``, ``store_memory``, ``retrieve_memory``, ``compute_rewards``, ``compute_returns``,
``compute_advantages``.

| setting | default | meaning |
| --- | --- | --- |
| ``memory`` | ``"reflection_only"`` | ``reflection_only``, ``history_only`` or ``history_and_reflection`` |
| ``reflection_max_chars`` | ``2000`` | a reflection is cut to this many characters |
| ``reward`` | ``"differential"`` | ``differential`` (Δ_n) or ``cumulative`` (R(τ_n), LaMer) |
| ``gamma_step`` | ``0.95`` | discount between the turns of an episode |
| ``gamma_traj`` | ``0.6`` | discount from an episode's last turn to the next episode's first |
| ``invalid_penalty`` | ``0.5`` | subtracted per invalid action turn |
| ``length_coef`` | ``2.0`` | c of the length penalty (2 for games) |
| ``max_new_tokens`` | ``256`` | L_max and the reflections' budget; keep it equal to ``trial.prompt.max_new_tokens`` |
| ``w`` | ``1.0`` | weight of the anchor bracket |
| ``std_norm`` | ``false`` | divide each bracket by its std + ``eps`` (MAGE: mean only) |
| ``eps`` | ``1e-6`` | added to the std |
| ``unbiased_std`` | ``true`` | Bessel-corrected std when ``std_norm`` |
| ``mixed_groups`` | ``false`` | ablation: episode baseline over the whole batch, mixing opponents |
| ``per_episode_anchors`` | ``false`` | ablation: anchors prefixed with the episode ("Trial k") |
| ``reflection_anchor`` | ``true`` | reflections share a "reflection"+opponent step group ([C]); false: bracket 0 |
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Literal

import attrs

from arena.core import (
    ChatMessage,
    ConfigError,
    EpisodeRecord,
    MemoryItem,
    PromptConfig,
    Reflection,
    ReflectionRequest,
    Sample,
    Segment,
    TrialRecord,
    TrialSpec,
    Turn,
    group_normalized,
    hookimpl,
    read_settings,
    setting,
)

NAME = "mage"
REFLECTION_KIND = f"reflection:{NAME}"
# The plain reflection plugin's request name: seeing it in a trial means both plugins reflect.
PLAIN_REFLECTION = "reflection"
# Terms this plugin writes; the core's ``env`` term (plain episodic return) is replaced by Δ_n.
INVALID_TERM = "invalid"
LENGTH_TERM = "length"
ENV_TERM = "env"


@attrs.frozen
class Settings:
    """mage's settings: ``options.mage`` of a learner (checked when the run config loads)."""

    memory: Literal["reflection_only", "history_only", "history_and_reflection"] = setting(
        "reflection_only", "reflection_only, history_only or history_and_reflection"
    )
    reflection_max_chars: int = setting(2000, "a reflection is cut to this many characters")
    reward: Literal["differential", "cumulative"] = setting(
        "differential", "differential (Δ_n) or cumulative (R(τ_n), LaMer)"
    )
    gamma_step: float = setting(0.95, "discount between the turns of an episode")
    gamma_traj: float = setting(0.6, "discount from an episode's last turn to the next episode's first")
    invalid_penalty: float = setting(0.5, "subtracted per invalid action turn")
    length_coef: float = setting(2.0, "c of the length penalty (2 for games)")
    max_new_tokens: int = setting(
        PromptConfig().max_new_tokens,
        "L_max and the reflections' budget; keep it equal to trial.prompt.max_new_tokens",
        validator=attrs.validators.ge(2),
    )
    w: float = setting(1.0, "weight of the anchor bracket")
    std_norm: bool = setting(False, "divide each bracket by its std + eps (MAGE: mean only)")
    eps: float = setting(1e-6, "added to the std")
    unbiased_std: bool = setting(True, "Bessel-corrected std when std_norm")
    mixed_groups: bool = setting(False, "ablation: episode baseline over the whole batch, mixing opponents")
    per_episode_anchors: bool = setting(False, 'ablation: anchors prefixed with the episode ("Trial k")')
    reflection_anchor: bool = setting(
        True, 'reflections share a "reflection"+opponent step group ([C]); false: bracket 0'
    )


REFLECTION_SECTION = "Your reflections on earlier episodes of this trial:"
HISTORY_SECTION = "Earlier episodes of this trial:"


def settings(options: Mapping[str, Mapping[str, Any]] | None) -> Settings:
    """``options["mage"]`` read into :class:`Settings`; unknown keys, wrong types and unknown modes raise."""
    return read_settings(options, NAME, Settings)


# --------------------------------------------------------------------------------------------------------------
# Prompt composition: the reflection turn and what later turns see of earlier episodes
# --------------------------------------------------------------------------------------------------------------


def episode_transcript(episode: EpisodeRecord, agent: str) -> str:
    """Every move of the episode; for the seat's own moves also what it observed before moving."""
    lines = []
    for step in episode.steps:
        who = f"you ({agent})" if step.agent == agent else step.agent
        note = f" (invalid answer: {step.error})" if step.invalid else ""
        lines.append(f"- Step {step.index + 1}, {who}: {step.move_seen_by(agent)}{note}")
        if step.agent == agent and step.observation:
            lines.append("  What you saw: " + step.observation.strip().replace("\n", "\n  "))
    return "\n".join(lines) or "- (no moves)"


def episode_outcome(episode: EpisodeRecord, agent: str) -> str:
    summary = episode.summaries.get(agent, "").strip()
    result = f"Result: {episode.outcomes.get(agent, '?')}, your return {episode.returns.get(agent, 0.0):+g}."
    return f"{summary}\n{result}" if summary else result


def reflection_prompt(trial: TrialSpec, episode: EpisodeRecord, agent: str, earlier: Sequence[Reflection]) -> str:
    """MAGE's reflection request, in this project's words: review the episode, model the opponent, plan the next."""
    parts = [
        f"You are {agent} in {trial.arena_id}. Episode {episode.index + 1} of {trial.episodes} of this trial just "
        "ended. The next episode starts from exactly the same initial state against the same opponent, so what "
        "you learned about the opponent still holds."
    ]
    if earlier:
        parts.append(
            "Your reflections on earlier episodes:\n"
            + "\n".join(f"- After episode {r.episode + 1}: {r.content}" for r in earlier)
        )
    parts.append(f"Moves of episode {episode.index + 1}:\n{episode_transcript(episode, agent)}")
    parts.append(f"Outcome: {episode_outcome(episode, agent)}")
    parts.append(
        "Reflect on the episode: what the opponent did and what it tells you about its strategy, which of your "
        "moves helped or hurt, and a concrete plan for the next episode. Be specific and brief. "
        "Answer inside <remark>...</remark>."
    )
    return "\n\n".join(parts)


def _mine(reflections: Sequence[Reflection], agent: str) -> list[Reflection]:
    return [r for r in reflections if r.name == NAME and r.agent == agent]


def _check_no_plain_reflection(reflections: Sequence[Reflection]) -> None:
    if any(r.name == PLAIN_REFLECTION for r in reflections):
        raise ConfigError(
            f"plugins {NAME!r} and {PLAIN_REFLECTION!r} are both enabled and both reflect between episodes; "
            f"{NAME!r} writes MAGE's reflections itself, so remove {PLAIN_REFLECTION!r} from the plugin list"
        )


@hookimpl
def reflect(
    trial: TrialSpec, episode: EpisodeRecord, agent: str, reflections: tuple[Reflection, ...], last: bool
) -> ReflectionRequest | None:
    opts = settings(trial.options)
    _check_no_plain_reflection(reflections)
    if last or opts.memory == "history_only":  # a reflection only serves the episodes that follow it
        return None
    text = reflection_prompt(trial, episode, agent, _mine(reflections, agent))
    return ReflectionRequest(
        name=NAME,
        messages=(ChatMessage("user", text),),
        extract_tag="remark",
        max_chars=opts.reflection_max_chars,
        max_new_tokens=opts.max_new_tokens,
        # Sampled like the action turns (the engine's default segment); trained: MAGE credits reflections.
        segments=(Segment(),),
        trained=True,
    )


@hookimpl
def store_memory(reflection: Reflection) -> None:
    # The reflections live on the trial record (``Turn.reflections``); nothing to keep here. This is the
    # earliest point at which the plain reflection plugin shows itself, right after the first reflection turn.
    _check_no_plain_reflection([reflection])


@hookimpl
def retrieve_memory(turn: Turn) -> list[MemoryItem]:
    opts = settings(turn.trial.options)
    _check_no_plain_reflection(turn.reflections)
    mode = opts.memory
    by_episode = {r.episode: r for r in _mine(turn.reflections, turn.agent)}
    items = []
    for episode in turn.earlier_episodes:
        # Chronological order: the earliest episode scores highest.
        score = -float(episode.index)
        reflection = by_episode.get(episode.index)
        if mode == "reflection_only":
            if reflection is not None:
                text = f"After episode {episode.index + 1}: {reflection.content}"
                items.append(MemoryItem(text=text, section=REFLECTION_SECTION, score=score, source=NAME))
            continue
        body = f"{episode_transcript(episode, turn.agent)}\nOutcome: {episode_outcome(episode, turn.agent)}"
        if mode == "history_and_reflection" and reflection is not None:
            body += f"\nYour reflection: {reflection.content}"
        # Indented under its "- Episode k:" bullet so the transcript's own bullets read as part of it.
        text = f"Episode {episode.index + 1}:\n  " + body.replace("\n", "\n  ")
        items.append(MemoryItem(text=text, section=HISTORY_SECTION, score=score, source=NAME))
    return items


# --------------------------------------------------------------------------------------------------------------
# Rewards: penalties as named terms
# --------------------------------------------------------------------------------------------------------------


def length_penalty(length: int, max_new_tokens: int, coef: float) -> float:
    """c·min(1, (L − L_max/2)/(L_max/2)) above half the budget, else 0 (returned as a positive number)."""
    half = max_new_tokens / 2
    if length <= half:
        return 0.0
    return coef * min(1.0, (length - half) / half)


def penalty_terms(sample: Sample, invalid_penalty: float, length_coef: float, max_new_tokens: int) -> dict[str, float]:
    """The (negative) penalty terms of one sample; terms that would be 0 are left out."""
    terms: dict[str, float] = {}
    if sample.kind == "action" and sample.meta.get("invalid") and invalid_penalty:
        terms[INVALID_TERM] = -invalid_penalty
    length = length_penalty(len(sample.completion_ids), max_new_tokens, length_coef)
    if length:
        terms[LENGTH_TERM] = -length
    return terms


@hookimpl
def compute_rewards(trial: TrialRecord, samples: list[Sample]) -> dict[int, dict[str, float]]:
    opts = settings(trial.spec.options)
    if any(INVALID_TERM in s.reward_terms for s in samples):
        raise ConfigError(
            f"plugin {NAME!r} adds its own {INVALID_TERM!r} penalty ({opts.invalid_penalty} per invalid turn); "
            "set the learner's invalid_penalty to 0"
        )
    out = {}
    for i, sample in enumerate(samples):
        terms = penalty_terms(sample, opts.invalid_penalty, opts.length_coef, opts.max_new_tokens)
        if terms:
            out[i] = terms
    return out


# --------------------------------------------------------------------------------------------------------------
# Returns: differential reward, γ_step within an episode, γ_traj across episodes
# --------------------------------------------------------------------------------------------------------------

ChainKey = tuple[str, str]  # (trial_id, agent)


def is_reflection(sample: Sample) -> bool:
    return sample.kind.startswith("reflection:")


def _action_chains(samples: Sequence[Sample]) -> dict[ChainKey, dict[int, list[int]]]:
    """Indices of the action samples of each (trial, agent), by episode, each episode in turn order."""
    chains: dict[ChainKey, dict[int, list[int]]] = {}
    for i, s in enumerate(samples):
        if s.kind == "action":
            chains.setdefault((s.trial_id, s.agent), {}).setdefault(s.episode, []).append(i)
    for episodes in chains.values():
        for indices in episodes.values():
            indices.sort(key=lambda i: samples[i].turn)
    return chains


def episode_rewards(samples: Sequence[Sample], reward: str = "differential") -> dict[tuple[str, str, int], float]:
    """Δ_n (or R(τ_n) when ``reward == "cumulative"``) of every (trial, agent, episode) with action samples.

    R(τ_n) is ``meta["episode_return"]``, the learner seat's plain return in that episode (set by the core).
    """
    out: dict[tuple[str, str, int], float] = {}
    for (trial, agent), episodes in _action_chains(samples).items():
        previous = 0.0  # R(τ_0)
        for episode in sorted(episodes):
            value = float(samples[episodes[episode][0]].meta["episode_return"])
            out[(trial, agent, episode)] = value - previous if reward == "differential" else value
            previous = value
    return out


def mage_returns(
    samples: Sequence[Sample], reward: str = "differential", gamma_step: float = 0.95, gamma_traj: float = 0.6
) -> list[float]:
    """G of every sample (module docstring, item 2). Samples that are neither actions nor reflections keep the
    sum of their reward terms (the core's default return)."""
    rewards = episode_rewards(samples, reward)
    out = [s.reward for s in samples]
    first_return: dict[tuple[str, str, int], float] = {}
    for (trial, agent), episodes in _action_chains(samples).items():
        following = 0.0  # G of the first step of the next episode; 0 after the last one
        for episode in sorted(episodes, reverse=True):
            indices = episodes[episode]
            g = rewards[(trial, agent, episode)] + gamma_traj * following
            for position, i in enumerate(reversed(indices)):
                if position:
                    g *= gamma_step
                out[i] = g
            first_return[(trial, agent, episode)] = g
            following = g
    for i, s in enumerate(samples):
        if is_reflection(s):
            out[i] = first_return.get((s.trial_id, s.agent, s.episode + 1), 0.0)
    return out


@hookimpl
def compute_returns(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    opts = settings(options)
    return mage_returns(samples, opts.reward, opts.gamma_step, opts.gamma_traj)


# --------------------------------------------------------------------------------------------------------------
# Advantages: episode bracket + w · anchor bracket, mean only
# --------------------------------------------------------------------------------------------------------------


def extra_terms(sample: Sample) -> float:
    """Every reward term but the core's ``env`` (replaced by Δ_n): the penalties, any other plugin's terms."""
    return float(sum(v for k, v in sample.reward_terms.items() if k != ENV_TERM))


def episode_values(samples: Sequence[Sample], reward: str = "differential") -> list[float]:
    """E_i of the episode bracket: Δ_n + penalties for actions, G + penalties for reflections, else ``ret``."""
    rewards = episode_rewards(samples, reward)
    out = []
    for s in samples:
        if s.kind == "action":
            out.append(rewards[(s.trial_id, s.agent, s.episode)] + extra_terms(s))
        elif is_reflection(s):
            out.append(s.ret + extra_terms(s))
        else:
            out.append(s.ret)
    return out


def anchor_keys(
    samples: Sequence[Sample], per_episode_anchors: bool = False, reflection_anchor: bool = True
) -> list[Hashable]:
    """Step-group key of each sample: (group, anchor) for an action; (group, "reflection", opponent) for a
    reflection (MAGE's code); a key of its own (anchor bracket 0) for anything else, for an action without anchor
    and, with ``reflection_anchor`` off, for a reflection. ``per_episode_anchors`` adds the episode ("Trial k";
    for a reflection, the episode it prepares) to the anchor."""
    keys: list[Hashable] = []
    for i, s in enumerate(samples):
        if is_reflection(s) and reflection_anchor:
            label = (f"Trial {s.episode + 2}",) if per_episode_anchors else ()
            keys.append((s.group_id, *label, "reflection", s.opponent or ""))
        elif s.anchor is None or s.kind != "action":
            keys.append(("<own>", i))
        elif per_episode_anchors:
            keys.append((s.group_id, f"Trial {s.episode + 1}", s.anchor))
        else:
            keys.append((s.group_id, s.anchor))
    return keys


def mage_advantages(
    samples: Sequence[Sample],
    reward: str = "differential",
    w: float = 1.0,
    std_norm: bool = False,
    eps: float = 1e-6,
    unbiased_std: bool = True,
    mixed_groups: bool = False,
    per_episode_anchors: bool = False,
    reflection_anchor: bool = True,
) -> list[float]:
    """A of every sample (module docstring, item 4); ``Sample.ret`` must already hold ``mage_returns``."""
    groups: list[Hashable] = ["<batch>" if mixed_groups else s.group_id for s in samples]
    episode = group_normalized(
        episode_values(samples, reward), groups, std_norm=std_norm, eps=eps, unbiased_std=unbiased_std
    )
    step = group_normalized(
        [s.ret for s in samples],
        anchor_keys(samples, per_episode_anchors, reflection_anchor),
        std_norm=std_norm,
        eps=eps,
        unbiased_std=unbiased_std,
    )
    return [e + w * a for e, a in zip(episode, step, strict=True)]


@hookimpl
def compute_advantages(samples: list[Sample], options: Mapping[str, Mapping[str, Any]]) -> list[float]:
    opts = settings(options)
    return mage_advantages(
        samples,
        reward=opts.reward,
        w=opts.w,
        std_norm=opts.std_norm,
        eps=opts.eps,
        unbiased_std=opts.unbiased_std,
        mixed_groups=opts.mixed_groups,
        per_episode_anchors=opts.per_episode_anchors,
        reflection_anchor=opts.reflection_anchor,
    )
