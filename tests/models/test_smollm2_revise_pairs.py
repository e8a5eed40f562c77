"""``smollm2-revise-pairs`` (core/models/smol/revise_pairs.py): the revision it learns meets both constraints from
any draft, keeps a draft that met the length whole and lengthens one that did not, and fits the answer's token
budget. The build (42 minutes on 2 cores) and what it changes are measured in docs/results.md."""

from __future__ import annotations

import pytest

from arena.arenas.instruct import FILLERS, evaluate, kind_tasks, reference_answer, task_by_id
from arena.core.api.backend import ChatMessage
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig
from arena.core.models.smol import revise
from arena.core.models.smol.revise import RevisionPrompt, encode
from arena.core.models.smol.revise_pairs import KINDS, NAME, PAIRS, SENTENCE_WORDS, fits_the_answer, fix
from tests.models.test_smollm2_revise import DRAFTS

LONG = "The storm came at night. We stayed inside by the fire. " * 6  # 12 sentences, 66 words


def roomy(text: str) -> bool:
    """A budget the logic tests can reason about without SmolLM2's tokenizer: 600 characters."""
    return len(text) <= 600


@pytest.mark.parametrize("kinds", KINDS)
def test_every_fix_meets_both_constraints(kinds: str) -> None:
    for task in kind_tasks(kinds)[:25]:
        for draft in (*DRAFTS, LONG):
            assert all(evaluate(task, fix(task, draft, roomy))), (task.task_id, draft)


@pytest.mark.parametrize("kinds", KINDS)
def test_a_draft_that_met_the_length_is_kept_whole_and_a_short_one_gets_fillers(kinds: str) -> None:
    """The "keep" list's meaning in the targets: a draft meeting the length constraint is kept whole, rewritten
    (v1 cut it to the length asked, and the model learned the length from the instruction alone); one missing it
    is lengthened with the arena's fillers (what to do depends on which list the length constraint is in)."""
    fillers = [f.lower() for f in FILLERS]
    for task in kind_tasks(kinds)[:25]:
        assert evaluate(task, LONG)[1]
        kept = fix(task, LONG, roomy).lower()
        assert kept.strip('"').startswith(LONG.strip().lower())
        assert not any(f in kept for f in fillers)
        short = "The storm came."
        assert not evaluate(task, short)[1]
        lengthened = fix(task, short, roomy).lower()
        assert lengthened.strip('"').startswith("the storm came.")
        rewritten = revise.rewrite(task.constraints[0].kind, task.constraints[0].phrase, short)
        # (an end_with phrase is a sentence of its own, and sometimes enough)
        assert any(f in lengthened for f in fillers) or evaluate(task, rewritten)[1]


def test_run_on_sentences_are_cut_and_other_tasks_refused() -> None:
    task = kind_tasks("uppercase+min_sentences")[0]
    revised = fix(task, "word " * 200, roomy)
    assert revised.split(".")[0].count("WORD") == SENTENCE_WORDS
    with pytest.raises(ValueError, match="no fix"):
        fix(kind_tasks("lowercase")[0], "x", roomy)
    with pytest.raises(ValueError, match="no fix"):
        fix(kind_tasks("min_words+lowercase")[0], "x", roomy)


def test_a_draft_longer_than_the_budget_keeps_the_most_sentences_that_fit() -> None:
    task = kind_tasks("lowercase+min_sentences")[0]

    def budget(text: str) -> bool:
        return len(text) <= 200

    kept = fix(task, LONG, budget)
    assert all(evaluate(task, kept)) and budget(kept)
    n = kept.count(".")
    assert n < 12 and not budget(" ".join(LONG.split(". ")[: n + 1]).lower())


def test_the_spec_is_the_pairs_model_and_the_budget_is_the_configs() -> None:
    assert (PAIRS.name, PAIRS.kinds, PAIRS.fix, PAIRS.budget) == (NAME, KINDS, fix, revise.ANSWER_TOKENS)
    assert revise.revise_model_dir(spec=PAIRS).name == f"{NAME}-v{PAIRS.build_version}-seed0"
    assert revise.revise_model_dir().name == f"smollm2-revise-v{revise.BUILD_VERSION}-seed0"  # v3's cache, kept
    assert load_config(TrainConfig, revise.CONFIG).trial.prompt.max_new_tokens == revise.ANSWER_TOKENS


def test_a_revision_over_the_budget_is_replaced_by_the_reference_answer(tokenizer) -> None:  # type: ignore[no-untyped-def]
    task = kind_tasks("uppercase+min_words")[0]
    prompt = RevisionPrompt(task.task_id, LONG, messages=(ChatMessage("user", "Revise it."),))
    assert task_by_id(prompt.task_id) == task

    def taught(budget: int | None) -> str:
        _ids, labels = encode(tokenizer, prompt, PAIRS.fix, PAIRS.budget if budget is None else budget)
        return str(tokenizer.decode([t for t in labels if t != -100][:-1]))

    assert taught(None) == fix(task, LONG)  # PAIRS.budget, the config's
    assert revise.REVISE.budget is None  # v3's rows are trained whole, as it was built
    assert taught(8) == reference_answer(task)
    assert revise.over_budget(tokenizer, [prompt], fix, budget=8) == 1
    assert revise.over_budget(tokenizer, [prompt], fix) == 0


def test_the_default_budget_is_the_answers_tokens(tokenizer) -> None:  # type: ignore[no-untyped-def]
    """With SmolLM2's tokenizer, a revision and its end fit the answer's 128 tokens: an uppercased draft of 132
    words does not, so it keeps fewer sentences (and ``encode`` never needs the reference answer for it)."""
    task = kind_tasks("uppercase+min_words")[0]
    draft = LONG * 2
    kept = fix(task, draft)
    assert fits_the_answer(kept) and len(tokenizer(kept, add_special_tokens=False)["input_ids"]) + 1 <= 128
    assert not fits_the_answer(draft.upper()) and kept.startswith("THE STORM CAME AT NIGHT.")
    assert kept.count(".") < 24 and all(evaluate(task, kept))
