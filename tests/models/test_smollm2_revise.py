"""``smollm2-revise`` (core/models/smol/revise.py): the revision it learns meets the constraint from any draft, and
its prompts are the ``herl`` plugin's own, and its rows train the revision and anchor the first answer. The build
itself (about 15 minutes) and what it changes are measured in
docs/results.md, not here."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from arena.arenas.instruct import evaluate, kind_tasks, task_by_id, tasks_for
from arena.core.api.backend import GenerationRequest
from arena.core.backends.scripted import ScriptedBackend
from arena.core.models.smol.revise import (
    KINDS,
    ReviseRecipe,
    collect_revision_prompts,
    fix,
    opening,
    training_rows,
)
from arena.core.rollout.seats import BackendPool

DRAFTS = (
    "",
    "42 !!!",
    "Привет, 日本語",
    '"Already quoted," she said. Then more words follow here.',
    "Dear Sam,\n\n- a bullet\n- another one\n\nSee you. " + "word " * 200,
    "One long sentence without an end " * 20,
)


@pytest.mark.parametrize("kind", KINDS)
def test_every_fix_meets_its_constraint_and_keeps_the_draft_short(kind: str) -> None:
    for task in kind_tasks(kind)[:25]:
        for draft in DRAFTS:
            revised = fix(task, draft)
            assert all(evaluate(task, revised)), (task.task_id, draft, revised)
            assert len(revised.split()) <= 40 + len(task.constraints[0].phrase.split()) + len(task.request.split())


def test_opening_keeps_whole_sentences_up_to_the_budget() -> None:
    assert opening("A b c. D e f. G h i.", words=6) == "A b c. D e f."
    assert opening("A b c d e f g h.", words=3) == "A b c"
    assert opening("  A\n\nb.  ") == "A b."
    with pytest.raises(ValueError, match="no fix"):
        fix(kind_tasks("json")[0], "x")


def test_the_prompts_are_herls_own_for_failed_drafts_only() -> None:
    """Scripted drafts through the real engine: a passing draft gets no prompt; a failing one gets exactly the
    ``herl`` plugin's hindsight prompt (``plugins.herl.hindsight_prompt``), naming the constraint it missed."""
    drafts: list[str] = []

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        # A draft that meets lowercase and quotes, and misses uppercase and end_with.
        text = '"hello there"'
        drafts.append(text)
        return text

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    prompts = collect_revision_prompts("train", model="model:scripted", pool=pool, limit=8)
    assert len(drafts) == 8
    tasks = tasks_for("train", kinds=KINDS)[:8]
    failed = [(t.task_id, d) for t, d in zip(tasks, drafts, strict=True) if not all(evaluate(t, d))]
    assert 0 < len(failed) < 8
    assert [(p.task_id, p.draft) for p in prompts] == failed
    for prompt in prompts:
        task = task_by_id(prompt.task_id)
        expected = "\n\n".join(
            [
                "Here is an instruction and a draft answer to it.",
                "Instruction:\n" + task.prompt(),
                "Constraints the draft already satisfies (keep them satisfied):\n- (none)",
                "Constraints the draft does not satisfy yet (fix them):\n- " + task.constraints[0].description,
                "Draft:\n" + prompt.draft.strip(),
                "Revise the draft: keep the satisfied constraints, fix the unmet ones, and add no new facts.",
                "Reply with the response only.",
            ]
        )
        assert prompt.messages[-1].content == expected


def test_rows_train_the_revision_and_anchor_the_first_answer(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """Every failed draft gives a revision row (HeRL's prompt → ``fix``) and, with ``anchor``, a row that trains the
    draft's own prompt on the draft; no loss on either prompt. v2 was built without its anchor rows because the
    prompts carried no ``original``: the anchor recipe now refuses such prompts."""

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        return "Hello There, friend."

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    prompts = collect_revision_prompts("train", model="model:scripted", pool=pool, limit=6)
    assert prompts and all(p.original and p.finished for p in prompts)
    for prompt in prompts:
        task = task_by_id(prompt.task_id)
        assert prompt.original[-1].content.count(task.prompt()) == 1  # the instruction's own prompt, not HeRL's
        assert "Draft:" not in prompt.original[-1].content
    rows = training_rows(tokenizer, prompts, ReviseRecipe())
    assert len(rows) == 2 * len(prompts)
    assert len(training_rows(tokenizer, prompts, ReviseRecipe(anchor=False))) == len(prompts)
    eos = tokenizer.eos_token_id
    for prompt, (ids, labels) in zip(prompts + prompts, rows, strict=True):
        taught = [t for t in labels if t != -100]
        assert labels[: len(ids) - len(taught)] == [-100] * (len(ids) - len(taught))
        assert taught[-1] == eos
        text = tokenizer.decode(taught[:-1])
        assert text in (fix(task_by_id(prompt.task_id), prompt.draft), prompt.draft)
    assert {tokenizer.decode([t for t in r[1] if t != -100][:-1]) for r in rows[len(prompts) :]} == {
        "Hello There, friend."
    }
    with pytest.raises(ValueError, match="original"):
        training_rows(tokenizer, [attrs.evolve(prompts[0], original=())], ReviseRecipe())
