"""From played trials to samples: every LLM turn of a learner becomes a ``Sample``.

The default credit assignment is the plain episodic one: each turn of an episode gets the learner seat's
episode return as its reward term ``env`` (and ``invalid`` for a penalised invalid answer), returns are the
reward discounted by ``gamma`` per remaining turn of the learner in that episode, and reflections are credited
with the return of the episode that follows them. Plugins refine this: ``compute_rewards`` adds named terms
(MAGE's differential reward replaces it through its own terms).
"""

from __future__ import annotations

from collections.abc import Sequence

from arena.core.api.records import Step, TrialRecord
from arena.core.api.samples import Sample


def _context(step_prompt_ids: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(t) for t in step_prompt_ids)


def _prompt_text(step: Step) -> str:
    return "\n\n".join(m.content for m in step.prompt)


def trial_samples(
    trial: TrialRecord, learner: str, seat_specs: Sequence[str], invalid_penalty: float = 0.0, gamma: float = 1.0
) -> list[Sample]:
    """Samples of every turn taken by a seat whose spec is in ``seat_specs`` (the learner's seats)."""
    spec = trial.spec
    agents = list(trial.final.returns)
    learner_agents = {agents[i] for i, text in enumerate(spec.seats) if text in seat_specs}
    opponent = ",".join(text for text in spec.seats if text not in seat_specs) or None
    samples: list[Sample] = []
    for episode in trial.episodes:
        for agent in sorted(learner_agents, key=agents.index):
            turns = [s for s in episode.steps if s.agent == agent and s.completion is not None]
            final = episode.returns[agent]
            for position, step in enumerate(turns):
                assert step.completion is not None
                terms = {"env": final * gamma ** (len(turns) - 1 - position)}
                if step.invalid_answers and invalid_penalty:
                    terms["invalid"] = -invalid_penalty * step.invalid_answers
                samples.append(
                    Sample(
                        learner=learner,
                        trial_id=spec.trial_id,
                        episode=episode.index,
                        turn=step.index,
                        agent=agent,
                        kind="action",
                        context_ids=_context(step.completion.prompt_token_ids),
                        completion_ids=tuple(step.completion.token_ids),
                        behaviour_logprobs=tuple(step.completion.logprobs),
                        temperatures=tuple(step.completion.temperatures),
                        context_text=_prompt_text(step),
                        context_messages=tuple(step.prompt),
                        completion_text=step.completion.text,
                        group_id=spec.group_id or spec.trial_id,
                        anchor=f"{step.observation}\x1f{opponent}",
                        opponent=opponent,
                        reward_terms=terms,
                        recompute_old=step.recompute_old,
                        meta={
                            "arena": spec.arena_id,
                            "episode_return": final,
                            "outcome": episode.outcomes[agent],
                            "invalid": step.invalid,
                            "details": episode.details.get(agent, {}),
                            "feedback": episode.summaries.get(agent, ""),
                            "plans": step.plans,
                            "finish_reason": step.completion.finish_reason,
                            "discount": gamma,
                        },
                    )
                )
    by_episode = {e.index: e for e in trial.episodes}
    for reflection in trial.reflections:
        if reflection.agent not in learner_agents or not reflection.trained or reflection.completion is None:
            continue
        following = by_episode.get(reflection.episode + 1)
        credit = following.returns[reflection.agent] if following is not None else 0.0
        completion = reflection.completion
        samples.append(
            Sample(
                learner=learner,
                trial_id=spec.trial_id,
                episode=reflection.episode,
                turn=-1,
                agent=reflection.agent,
                kind=f"reflection:{reflection.name}",
                context_ids=_context(completion.prompt_token_ids),
                completion_ids=tuple(completion.token_ids),
                behaviour_logprobs=tuple(completion.logprobs),
                temperatures=tuple(completion.temperatures),
                context_text="\n\n".join(m.content for m in reflection.prompt),
                context_messages=tuple(reflection.prompt),
                completion_text=completion.text,
                group_id=spec.group_id or spec.trial_id,
                anchor=None,
                opponent=opponent,
                reward_terms={"env": credit},
                meta={"arena": spec.arena_id, "episode_return": credit},
            )
        )
    return samples
