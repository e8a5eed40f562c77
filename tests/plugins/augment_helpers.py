"""Hand-made groups and scored answers for the HeRL and GOLF unit tests (no model, no arena)."""

from __future__ import annotations

from arena.core.api.augment import GroupTask, ScoredAnswer
from arena.core.api.backend import ChatMessage, Completion
from arena.core.api.samples import Sample

TASK = GroupTask(arena_id="instruct", arena_kwargs={}, seed=7, group_id="g0", episode=0, iteration=3)
RUBRICS = ("Use at most 10 words.", "Mention a cat.", "End with 'Bye.'")


def rubric_details(satisfied: tuple[bool, ...]) -> dict[str, object]:
    met = [RUBRICS[i] for i, ok in enumerate(satisfied) if ok]
    return {
        "task_id": "t7",
        "score": sum(satisfied) / len(satisfied),
        "task_text": "Write a note. " + " ".join(RUBRICS),
        "rubrics": [{"description": d, "satisfied": ok} for d, ok in zip(RUBRICS, satisfied, strict=True)],
        "critique": "Unmet: " + " ".join(d for d in RUBRICS if d not in met),
    }


def sample(k: int, satisfied: tuple[bool, ...], text: str = "") -> Sample:
    details = rubric_details(satisfied)
    return Sample(
        learner="l",
        trial_id=f"g0-t{k}",
        episode=0,
        turn=0,
        agent="player_0",
        kind="action",
        context_ids=(1, 2, 3),
        completion_ids=(10 + k, 11),
        behaviour_logprobs=(-0.5, -0.7),
        temperatures=(1.0, 1.0),
        context_text="Write a note...",
        context_messages=(
            ChatMessage("system", "You are helpful."),
            ChatMessage("user", "Write a note.\n\nReply with the response only."),
        ),
        completion_text=text or f"draft {k}",
        group_id="g0",
        anchor=f"a{k}",
        reward_terms={"env": float(details["score"])},  # type: ignore[arg-type]
        meta={"details": details, "feedback": details["critique"]},
    )


def answer(text: str, reward: float, prompt: tuple[int, ...] = (7, 8, 9), temperature: float = 0.3) -> ScoredAnswer:
    ids = tuple(range(50, 50 + len(text.split()))) if text else ()
    return ScoredAnswer(
        completion=Completion(
            text=text,
            token_ids=ids,
            logprobs=tuple(-0.1 for _ in ids),
            temperatures=tuple(temperature for _ in ids),
            prompt_token_ids=prompt,
        ),
        messages=(ChatMessage("user", "REVISION PROMPT"),),
        reward=reward,
        details={"score": reward},
        feedback="",
    )
