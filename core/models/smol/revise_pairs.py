"""``smollm2-revise-pairs``: ``smollm2-revise``'s recipe on two-constraint tasks, its revisions keeping what the
draft met (the testbed of HeRL's naive-hindsight ablation, docs/testbeds.md section 8).

HeRL's revision prompt lists the constraints a draft already meets ("keep them satisfied") and the ones it misses
("fix them"); the naive ablation asks for a better draft without either list. On one-constraint tasks the lists
add nothing the instruction does not say, and on two-constraint tasks ``smollm2-revise`` v3 could not use them: it
was taught to rewrite a draft's opening of at most 40 words, so its revisions shortened every draft whatever the
"keep" list said (length kept 0.613 with either prompt, docs/results.md "HeRL's naive ablation on two-constraint
tasks").

This build drafts on the training tasks of ``KINDS`` (each of ``smollm2-revise``'s four rewrite kinds paired with
a length constraint that SmolLM2's drafts usually meet) and learns ``fix``: the draft itself, as much of it as the
answer's 128 tokens hold, rewritten for the rewrite kind, with the arena's neutral filler sentences added only when
the draft is too short. So the revision of a draft that met the length keeps the draft, and that of a draft that
missed it lengthens it: what to do depends on which list the length constraint is in, the fact the naive prompt
does not give. (v1 kept only as many of the draft's sentences as the length asked, so its targets sat at the
threshold whatever the draft met, and its revisions scattered around it: a third missed the length with either
prompt, docs/results.md "HeRL's naive ablation on ``smollm2-revise-pairs``".)

Anchor rows keep the first answers SmolLM2's own, as in ``smollm2-revise``. The build trains on HeRL's prompt
only, as ``smollm2-revise`` does, so the naive prompt is also new to it; on one-constraint tasks, where the lists
carry no fact, that alone cost v3's naive revisions 0.10 (0.54 against 0.64).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from itertools import chain, cycle, islice
from typing import TYPE_CHECKING, Any

from arena.core.models import smollm2
from arena.core.models.smol import revise

if TYPE_CHECKING:
    from arena.arenas.instruct import InstructTask

NAME = "smollm2-revise-pairs"
#: v1: revision rows from the eight kind sets below (targets: the draft's first sentences, as many as the length
#: asked), and anchor rows, 160 steps (``ReviseRecipe``). v2: the targets keep the whole draft, as much as fits.
BUILD_VERSION = 2
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


@cache
def _smollm2_tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(smollm2.build_smollm2())


def fits_the_answer(text: str) -> bool:
    """Whether ``text`` and its end-of-sequence fit the answer's token budget (``revise.ANSWER_TOKENS``, SmolLM2's
    tokenizer): a longer revision would be cut off by the arena."""
    return len(_smollm2_tokenizer()(text, add_special_tokens=False)["input_ids"]) + 1 <= revise.ANSWER_TOKENS


def fix(task: InstructTask, draft: str, fits: Callable[[str], bool] = fits_the_answer) -> str:
    """The revision the model learns for a two-constraint task (a rewrite kind, then a length kind): the draft's
    sentences, all of them if the rewrite ``fits`` (default: the answer's 128 tokens), else the most that fit,
    then the arena's filler sentences while the length is still missed, rewritten for the rewrite kind. Falls back
    to the arena's reference answer when no such text meets both constraints within ``fits`` and
    ``MAX_SENTENCES`` sentences. Raises ``ValueError`` for a task that is not such a pair."""
    from arena.arenas.instruct import FILLERS, evaluate, reference_answer

    kinds = tuple(c.kind for c in task.constraints)
    if len(kinds) != 2 or kinds[0] not in revise.KINDS or kinds[1] not in LENGTH_KINDS:
        raise ValueError(f"{NAME} has no fix for a task with constraints {kinds!r}")
    first = task.constraints[0]
    own = _sentences(draft)
    kept: list[str] = []
    best: str | None = None
    for sentence in islice(chain(own, cycle(FILLERS)), MAX_SENTENCES):
        revised = revise.rewrite(first.kind, first.phrase, " ".join([*kept, sentence]))
        if not fits(revised):
            break
        kept.append(sentence)
        if all(evaluate(task, revised)):
            best = revised
            # The whole draft is in, and fillers only ever make up for a length the draft missed.
            if len(kept) >= len(own):
                break
    return best if best is not None else reference_answer(task)


PAIRS = revise.ReviseModel(NAME, BUILD_VERSION, KINDS, fix, budget=revise.ANSWER_TOKENS)


def resolve_smollm2_revise_pairs() -> str:
    return revise.resolve_smollm2_revise(PAIRS)


def smollm2_revise_pairs_info() -> dict[str, Any]:
    """What ``arena models`` shows, without building anything."""
    return revise.smollm2_revise_info(PAIRS)
