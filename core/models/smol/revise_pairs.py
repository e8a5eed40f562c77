"""``smollm2-revise-pairs``: ``smollm2-revise``'s recipe on two-constraint tasks, its revisions keeping what the
draft met (the testbed of HeRL's naive-hindsight ablation, docs/testbeds.md section 8).

HeRL's revision prompt lists the constraints a draft already meets ("keep them satisfied") and the ones it misses
("fix them"); the naive ablation asks for a better draft without either list. On one-constraint tasks the lists
add nothing the instruction does not say, and on two-constraint tasks ``smollm2-revise`` v3 could not use them: it
was taught to rewrite a draft's opening of at most 40 words, so its revisions shortened every draft whatever the
"keep" list said (length kept 0.613 with either prompt, docs/results.md "HeRL's naive ablation on two-constraint
tasks").

This build drafts on the training tasks of ``KINDS`` (each of ``smollm2-revise``'s four rewrite kinds paired with
a length constraint that SmolLM2's drafts usually meet) and learns ``fix``: the draft's own sentences, as many as
the length constraint needs, rewritten for the other one, with the arena's neutral filler sentences added only
when the draft is too short. So the revision of a draft that met the length keeps the length, and that of a draft
that missed it lengthens it: what to do depends on which list the length constraint is in, the fact the naive
prompt does not give. Anchor rows keep the first answers SmolLM2's own, as in ``smollm2-revise``. The build
trains on HeRL's prompt only, as ``smollm2-revise`` does, so the naive prompt is also new to it; on one-constraint
tasks, where the lists carry no fact, that alone cost v3's naive revisions 0.10 (0.54 against 0.64).
"""

from __future__ import annotations

from itertools import chain, cycle, islice
from typing import TYPE_CHECKING, Any

from arena.core.models.smol import revise

if TYPE_CHECKING:
    from arena.arenas.instruct import InstructTask

NAME = "smollm2-revise-pairs"
#: v1: revision rows from the eight kind sets below, and anchor rows, 160 steps (``ReviseRecipe``).
BUILD_VERSION = 1
#: The length constraints paired with each rewrite kind (both are met by most of SmolLM2's drafts, and a rewrite
#: of the draft's own sentences keeps them).
LENGTH_KINDS = ("min_words", "min_sentences")
KINDS = tuple(f"{kind}+{length}" for length in LENGTH_KINDS for kind in revise.KINDS)
#: Sentences a fix may take before it falls back to the arena's reference answer (the fillers are short).
MAX_SENTENCES = 24
#: Words a fix keeps of one draft sentence (a run-on draft without sentence ends is one long sentence; cut, it ends
#: with a full stop), so that the revision fits the answer's 128 tokens even in capitals.
SENTENCE_WORDS = 30


def _sentences(draft: str) -> list[str]:
    flat = " ".join(draft.split()).strip().strip('"').strip()
    sentences = []
    for sentence in revise.SENTENCE_END.split(flat):
        words = sentence.split()
        if len(words) > SENTENCE_WORDS:
            sentence = " ".join(words[:SENTENCE_WORDS]).rstrip(",;:") + "."
        if words:
            sentences.append(sentence)
    return sentences


def fix(task: InstructTask, draft: str) -> str:
    """The revision the model learns for a two-constraint task (a rewrite kind, then a length kind): the draft's
    first sentences, as many as the length constraint needs, then the arena's filler sentences if the draft runs
    out, rewritten for the rewrite kind. Falls back to the arena's reference answer when that takes more than
    ``MAX_SENTENCES`` sentences or still fails (a draft sentence the rewrite cannot pass). Raises ``ValueError``
    for a task that is not such a pair."""
    from arena.arenas.instruct import FILLERS, evaluate, reference_answer

    kinds = tuple(c.kind for c in task.constraints)
    if len(kinds) != 2 or kinds[0] not in revise.KINDS or kinds[1] not in LENGTH_KINDS:
        raise ValueError(f"{NAME} has no fix for a task with constraints {kinds!r}")
    first = task.constraints[0]
    kept: list[str] = []
    for sentence in islice(chain(_sentences(draft), cycle(FILLERS)), MAX_SENTENCES):
        kept.append(sentence)
        revised = revise.rewrite(first.kind, first.phrase, " ".join(kept))
        if all(evaluate(task, revised)):
            return revised
    return reference_answer(task)


PAIRS = revise.ReviseModel(NAME, BUILD_VERSION, KINDS, fix, budget=revise.ANSWER_TOKENS)


def resolve_smollm2_revise_pairs() -> str:
    return revise.resolve_smollm2_revise(PAIRS)


def smollm2_revise_pairs_info() -> dict[str, Any]:
    """What ``arena models`` shows, without building anything."""
    return revise.smollm2_revise_info(PAIRS)
