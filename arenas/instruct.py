"""The ``instruct`` arena: follow a short writing instruction with checkable constraints (IFEval/IFBench style).

One agent (``player_0``) per episode gets one task: a base request (a genre and a topic, e.g. "Write a short note
to a neighbour about a lost cat.") and 1-4 constraints from ``arena.arenas.instruct_constraints`` (word and
sentence counts, keywords, bullets, sections, case, start and end phrases, JSON, ...). Each constraint is a rubric
with a description and a deterministic checker. The whole answer (stripped) is the response; the reward is the
fraction of rubrics it satisfies, given at once (one answer per episode). ``arena_outcome`` is ``"win"`` only when
every rubric is satisfied; the episode summary is the critique (the unmet constraints).

Tasks are generated from fixed seeds (``generate_tasks``; 100 per tier, the tier being the number of constraints)
and split by a hash of the id like the coding arena's (about 20 % held out as ``test``). ``reset(seed=s)`` picks
``tasks[s % len(tasks)]`` of the chosen split (and tiers / task ids, in generation order); ``options={"task_id":
...}`` picks a task by id; with no seed a fixed-seed RNG picks. ``reference_answer(task)`` builds a response that
meets every constraint of a task (the tests use it to prove every generated task is satisfiable).

``kinds=[...]`` swaps the tiers for one-constraint task sets of those kinds (``kind_tasks``: 100 per kind, ids
``{kind}.{k:03d}``, interleaved kind by kind): HeRL's and GOLF's testbed (docs/testbeds.md) trains on the kinds a
model fails on the first try and meets once its revision is told what it missed. A kind set may name a combination
of kinds joined by ``+`` (``lowercase+min_words``): tasks with one constraint of each, in that order, ids
``lowercase+min_words.{k:03d}``. Those are where HeRL's rubric lists can say more than the instruction does: a draft
meets some constraints and misses others, and only the lists say which.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import attrs

from arena.arenas.instruct_constraints import KINDS, Constraint, compatible, count_sentences, count_words
from arena.arenas.single_task import SingleTaskTextEnv
from arena.core.api.arena import Move, ParseResult, SeatView

__all__ = [
    "InstructAdapter",
    "InstructEnv",
    "InstructTask",
    "all_tasks",
    "combination",
    "critique",
    "evaluate",
    "generate_tasks",
    "kind_tasks",
    "reference_answer",
    "split_of",
    "task_by_id",
    "tasks_for",
]

TIERS = (1, 2, 3, 4)
TASKS_PER_TIER = 100
HELD_OUT_PERCENT = 20
MAX_RESPONSE_CHARS = 4000

# (request phrase, the noun the reference answer calls it)
GENRES: tuple[tuple[str, str], ...] = (
    ("a short note to a neighbour", "note"),
    ("an email to a colleague", "email"),
    ("a product description", "description"),
    ("a short story", "story"),
    ("a diary entry", "entry"),
    ("a short speech for a school assembly", "speech"),
    ("a review", "review"),
    ("a blog post", "post"),
    ("an advertisement", "advert"),
    ("a letter to a friend", "letter"),
    ("a list of tips", "list"),
    ("a news report", "report"),
)
# (topic, four keywords that fit it)
TOPICS: tuple[tuple[str, tuple[str, str, str, str]], ...] = (
    ("a lost cat", ("collar", "whiskers", "garden", "reward")),
    ("a new bakery in town", ("bread", "oven", "morning", "croissant")),
    ("learning to swim", ("pool", "lesson", "breath", "courage")),
    ("a rainy weekend", ("umbrella", "puddle", "window", "blanket")),
    ("a broken bicycle", ("chain", "wheel", "repair", "helmet")),
    ("a summer picnic", ("basket", "sandwich", "park", "sunshine")),
    ("moving to a new city", ("boxes", "apartment", "neighbours", "map")),
    ("a school science fair", ("experiment", "poster", "volcano", "judge")),
    ("saving energy at home", ("lights", "heating", "bill", "insulation")),
    ("a birthday party", ("cake", "candles", "balloons", "gift")),
    ("a noisy construction site", ("drill", "dust", "schedule", "crane")),
    ("a community garden", ("tomatoes", "soil", "volunteers", "compost")),
    ("a train delay", ("platform", "ticket", "station", "announcement")),
    ("adopting a puppy", ("leash", "training", "vet", "toys")),
    ("a local football match", ("goal", "stadium", "referee", "fans")),
    ("a power cut", ("candles", "torch", "fridge", "darkness")),
    ("a museum visit", ("gallery", "painting", "guide", "history")),
    ("starting a book club", ("novel", "chapter", "meeting", "tea")),
    ("a winter storm", ("snow", "wind", "shovel", "roads")),
    ("a lost wallet", ("cards", "cash", "police", "receipt")),
    ("a cooking class", ("recipe", "knife", "onion", "apron")),
    ("a charity run", ("donation", "finish", "medal", "training")),
    ("a new phone", ("battery", "screen", "camera", "charger")),
    ("a camping trip", ("tent", "campfire", "stars", "backpack")),
)
FORBIDDEN_POOL = (
    "very",
    "really",
    "just",
    "basically",
    "actually",
    "thing",
    "stuff",
    "nice",
    "great",
    "literally",
    "honestly",
    "awesome",
    "totally",
    "maybe",
    "good",
    "bad",
)
START_PHRASES = ("Hello there", "Dear friend", "Good morning everyone", "Here is my answer", "Listen carefully")
END_PHRASES = (
    "Any other questions?",
    "See you soon.",
    "Thank you for reading.",
    "Let me know what you think.",
    "That is all for now.",
    "Have a wonderful day!",
)
JSON_KEYS: tuple[tuple[str, ...], ...] = ((), ("title", "message"), ("subject", "body"), ("summary", "text"))
PLACEHOLDER_NAMES = ("name", "address", "date")
MAX_WORDS_OPTIONS = (20, 25, 30, 40, 50, 60, 80, 100, 120, 150, 200)
MAX_SENTENCES_OPTIONS = (2, 3, 4, 5, 6, 8, 10, 12, 15, 20)
# Neutral sentences the reference answers pad with: no commas, none of FORBIDDEN_POOL, no markers.
FILLERS = (
    "I hope this helps.",
    "Please read it when you have time.",
    "Everyone is welcome to share ideas.",
    "We can talk about it later this week.",
    "Thank you for your patience.",
    "More details will follow soon.",
    "Feel free to ask me anything.",
    "It means a lot to all of us.",
    "Let us keep in touch.",
    "I will keep you updated.",
    "This is worth a moment of your time.",
    "Small steps make a big difference.",
)
POSTSCRIPT_TEXT = "P.S. Write back when you can."


@attrs.frozen
class InstructTask:
    """One instruction: the request, its constraints (the rubrics, in the order shown) and where it belongs."""

    task_id: str
    tier: int
    topic: str
    genre: str
    request: str
    constraints: tuple[Constraint, ...]

    @property
    def split(self) -> str:
        return split_of(self.task_id)

    @property
    def rubrics(self) -> tuple[str, ...]:
        return tuple(c.description for c in self.constraints)

    def prompt(self) -> str:
        """The instruction as the model sees it: the request, then one line per constraint."""
        return "\n".join([self.request, "Constraints:", *(f"- {d}" for d in self.rubrics)])


def split_of(task_id: str) -> str:
    """``"test"`` (held out) or ``"train"``, from a hash of the id alone (as in the coding arena)."""
    digest = hashlib.sha256(f"split:{task_id}".encode()).digest()
    return "test" if int.from_bytes(digest[:8], "big") % 100 < HELD_OUT_PERCENT else "train"


# ------------------------------------------------------------------------------------------ reference answers


def _chunks(items: Sequence[str], n: int) -> list[list[str]]:
    """``items`` in ``n`` contiguous, non-empty groups as even as possible (needs ``len(items) >= n``)."""
    size, extra = divmod(len(items), n)
    groups, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        groups.append(list(items[start:end]))
        start = end
    return groups


def _by_kind(task: InstructTask) -> dict[str, list[Constraint]]:
    found: dict[str, list[Constraint]] = {}
    for c in task.constraints:
        found.setdefault(c.kind, []).append(c)
    return found


def _noun(task: InstructTask) -> str:
    return dict(GENRES)[task.genre]


def _layout(task: InstructTask, sentences: Sequence[str]) -> str:
    """The reference text for ``sentences`` under the task's format constraints."""
    kinds = _by_kind(task)

    def one(kind: str) -> Constraint | None:
        return kinds[kind][0] if kind in kinds else None

    if (c := one("json")) is not None:
        body = " ".join(sentences)
        obj = {c.words[0]: task.topic.capitalize(), c.words[1]: body} if len(c.words) == 2 else {"response": body}
        text = json.dumps(obj)
    elif (c := one("bullets")) is not None:
        text = "\n".join("* " + " ".join(group) for group in _chunks(sentences, c.n))
    elif (c := one("sections")) is not None:
        text = "\n\n".join(f"SECTION {k}\n" + " ".join(g) for k, g in enumerate(_chunks(sentences, c.n), 1))
    elif (c := one("paragraphs")) is not None:
        text = "\n\n***\n\n".join(" ".join(group) for group in _chunks(sentences, c.n))
    else:
        text = " ".join(sentences)
    block = any(k in kinds for k in ("bullets", "sections"))
    if (c := one("start_with")) is not None:
        text = f"{c.phrase}." + ("\n" if block else " ") + text
    if one("title") is not None:
        text = f"<<{task.topic.capitalize()}>>\n" + text
    if (c := one("end_with")) is not None:
        text += ("\n" if block else " ") + c.phrase
    if one("postscript") is not None:
        text += "\n\n" + POSTSCRIPT_TEXT
    if one("lowercase") is not None:
        text = text.lower()
    if one("uppercase") is not None:
        text = text.upper()
    if one("quotes") is not None:
        text = f'"{text}"'
    return text


def reference_answer(task: InstructTask) -> str:
    """A response meeting every constraint of ``task``: a topic sentence, the keywords and placeholders in a
    sentence each, neutral filler sentences until the minimum counts and the structure's units are reached, laid
    out as the format constraints ask. (The upper limits of generated tasks are drawn above this answer's counts.)"""
    kinds = _by_kind(task)
    sentences = [f"This {_noun(task)} is about {task.topic}."]
    keywords = [c.words[0] for c in kinds.get("include_keyword", [])]
    for c in kinds.get("keyword_frequency", []):
        keywords += [c.words[0]] * c.n
    if keywords:
        sentences.append("Key words: " + " and ".join(keywords) + ".")
    for c in kinds.get("placeholders", []):
        sentences.append("Details: " + " and ".join(f"[{p}]" for p in PLACEHOLDER_NAMES[: c.n]) + ".")
    units = max((c.n for k in ("bullets", "sections", "paragraphs") for c in kinds.get(k, [])), default=1)
    min_words = max((c.n for c in kinds.get("min_words", [])), default=0)
    min_sentences = max((c.n for c in kinds.get("min_sentences", [])), default=0)
    filler = 0
    while True:
        if len(sentences) >= units:
            text = _layout(task, sentences)
            if count_words(text) >= min_words and count_sentences(text) >= min_sentences:
                return text
        sentences.append(FILLERS[filler % len(FILLERS)])
        filler += 1


# ------------------------------------------------------------------------------------------ task generation


def _draw_constraint(rng: random.Random, kind: str, keywords: list[str]) -> Constraint:
    """A constraint of ``kind`` with drawn parameters; ``keywords`` are the topic's unused keywords (consumed)."""
    if kind == "min_words":
        return Constraint(kind, n=rng.choice((20, 30, 40, 50, 60)))
    if kind == "min_sentences":
        return Constraint(kind, n=rng.choice((2, 3, 4, 5)))
    if kind in ("include_keyword", "keyword_frequency"):
        word = keywords.pop(rng.randrange(len(keywords)))
        return Constraint(kind, n=rng.choice((2, 3)) if kind == "keyword_frequency" else 1, words=(word,))
    if kind == "forbidden_words":
        return Constraint(kind, words=tuple(rng.sample(FORBIDDEN_POOL, rng.choice((1, 2)))))
    if kind == "bullets":
        return Constraint(kind, n=rng.choice((2, 3, 4, 5)))
    if kind == "sections":
        return Constraint(kind, n=rng.choice((2, 3)))
    if kind == "paragraphs":
        return Constraint(kind, n=rng.choice((2, 3, 4)))
    if kind == "start_with":
        return Constraint(kind, phrase=rng.choice(START_PHRASES))
    if kind == "end_with":
        return Constraint(kind, phrase=rng.choice(END_PHRASES))
    if kind == "json":
        return Constraint(kind, words=rng.choice(JSON_KEYS))
    if kind == "placeholders":
        return Constraint(kind, n=rng.choice((1, 2, 3)))
    return Constraint(kind)  # no parameters, or an upper limit drawn once the reference answer exists


def _limit(rng: random.Random, measured: int, options: Sequence[int], margin: int) -> int:
    """An upper limit at least ``measured + margin``: one of the two smallest such options (else rounded up)."""
    fitting = [o for o in options if o >= measured + margin][:2]
    return rng.choice(fitting) if fitting else -(-(measured + margin) // 10) * 10


def _draw_task(task_id: str, tier: int, rng: random.Random, only: Sequence[str] | None = None) -> InstructTask:
    """A task of ``tier`` constraints drawn from ``rng``; ``only`` fixes the kinds, one per constraint in order."""
    if only is not None and len(only) != tier:
        raise ValueError(f"only names {len(only)} kinds for a task of {tier} constraints")
    genre, _noun = GENRES[rng.randrange(len(GENRES))]
    topic, topic_keywords = TOPICS[rng.randrange(len(TOPICS))]
    keywords = list(topic_keywords)
    kinds: list[str] = []
    constraints: list[Constraint] = []
    while len(constraints) < tier:
        options = [only[len(kinds)]] if only is not None else [k for k in KINDS if compatible(kinds, k)]
        if not keywords:
            options = [k for k in options if k not in ("include_keyword", "keyword_frequency")]
        if not options:
            raise ValueError(f"{task_id}: the topic has no keyword left for a {'+'.join(only or ())} task")
        kind = rng.choice(options)
        kinds.append(kind)
        constraints.append(_draw_constraint(rng, kind, keywords))
    request = f"Write {genre} about {topic}."
    task = InstructTask(task_id, tier, topic, genre, request, tuple(constraints))
    # Upper limits come last: above what the reference answer needs, so every task is satisfiable.
    draft = reference_answer(task)
    limited = []
    for c in constraints:
        if c.kind == "max_words":
            c = attrs.evolve(c, n=_limit(rng, count_words(draft), MAX_WORDS_OPTIONS, 3))
        elif c.kind == "max_sentences":
            c = attrs.evolve(c, n=_limit(rng, count_sentences(draft), MAX_SENTENCES_OPTIONS, 0))
        limited.append(c)
    return attrs.evolve(task, constraints=tuple(limited))


def generate_tasks() -> tuple[InstructTask, ...]:
    """Every task, tier by tier: ids ``t{tier}.{k:03d}``, each drawn by ``random.Random`` seeded with its id (a
    str seed is hashed with SHA-512, so the list is the same on every machine and Python run). A draw whose prompt
    repeats an earlier task's is redrawn from the same generator."""
    tasks: list[InstructTask] = []
    seen: set[str] = set()
    for tier in TIERS:
        for k in range(TASKS_PER_TIER):
            task_id = f"t{tier}.{k:03d}"
            rng = random.Random(f"instruct:{task_id}")
            task = _draw_task(task_id, tier, rng)
            while task.prompt() in seen:
                task = _draw_task(task_id, tier, rng)
            seen.add(task.prompt())
            tasks.append(task)
    return tuple(tasks)


@functools.cache
def all_tasks() -> tuple[InstructTask, ...]:
    """The generated tasks (built once per process)."""
    return generate_tasks()


def combination(kind: str) -> tuple[str, ...]:
    """The kinds a kind set's name joins with ``+`` (``"lowercase+min_words"``), checked: known, and each
    compatible with the ones before it (no conflict, no repeat)."""
    kinds = tuple(kind.split("+"))
    for i, k in enumerate(kinds):
        if k not in KINDS:
            raise ValueError(f"unknown constraint kind {k!r}; kinds: {', '.join(sorted(KINDS))}")
        if not compatible(kinds[:i], k):
            raise ValueError(f"{kind!r}: {k!r} cannot join {'+'.join(kinds[:i])!r} in one task")
    return kinds


def is_kind_set(name: str) -> bool:
    """Whether ``name`` names a kind set (``json``, ``lowercase+min_words``) rather than the tiers' ``t<tier>``."""
    return all(k in KINDS for k in name.split("+"))


@functools.cache
def kind_tasks(kind: str) -> tuple[InstructTask, ...]:
    """``TASKS_PER_TIER`` tasks whose constraints are of ``kind`` (one kind, or a combination ``a+b``: one
    constraint of each, in order): ids ``{kind}.{k:03d}``, each drawn like the tiers' tasks from ``random.Random``
    seeded with its id, split by the same hash (about 20 % held out). A set of its own, apart from the tiers: the
    testbed of HeRL and GOLF (issue 26) trains on the kinds a model fails on the first try and fixes once told what
    it missed, and the tiers hold only a few tasks of each kind."""
    kinds = combination(kind)
    tasks: list[InstructTask] = []
    seen: set[str] = set()
    for k in range(TASKS_PER_TIER):
        task_id = f"{kind}.{k:03d}"
        rng = random.Random(f"instruct:{task_id}")
        task = _draw_task(task_id, len(kinds), rng, only=kinds)
        while task.prompt() in seen:
            task = _draw_task(task_id, len(kinds), rng, only=kinds)
        seen.add(task.prompt())
        tasks.append(task)
    return tuple(tasks)


def task_by_id(task_id: str) -> InstructTask:
    """A task of the tiers (``t1.000``) or of a kind set (``json.007``, ``lowercase+min_words.007``)."""
    kind = task_id.rpartition(".")[0]
    for task in kind_tasks(kind) if is_kind_set(kind) else all_tasks():
        if task.task_id == task_id:
            return task
    raise KeyError(f"no instruct task {task_id!r}")


def _interleaved(kinds: Sequence[str], split: str) -> list[InstructTask]:
    """The ``split`` tasks of each kind's set, round robin: the first of each kind, then the second, ... (a kind
    whose set ran out is skipped)."""
    if not kinds:
        raise ValueError("kinds must name at least one constraint kind")
    if len(set(kinds)) < len(kinds):
        raise ValueError(f"kinds names a kind twice: {list(kinds)}")
    sets = [[t for t in kind_tasks(kind) if split == "all" or t.split == split] for kind in kinds]
    return [t for row in itertools.zip_longest(*sets) for t in row if t is not None]


def tasks_for(
    split: str = "train",
    tiers: Iterable[int] | None = None,
    task_ids: Iterable[str] | None = None,
    kinds: Sequence[str] | str | None = None,
) -> list[InstructTask]:
    """The tasks of ``split`` (``train``, ``test`` or ``all``), optionally only ``tiers`` and ``task_ids``, in
    generation order. With ``kinds`` (a kind or a list), the kinds' own one-constraint sets (``kind_tasks``)
    instead of the tiers: the split's tasks of each kind in turn, so that a prefix of the list (a run's
    ``task_pool``) holds the kinds within one task of each other."""
    if split not in ("train", "test", "all"):
        raise ValueError(f"split must be 'train', 'test' or 'all', got {split!r}")
    if kinds is not None:
        if tiers is not None:
            raise ValueError("kinds and tiers do not combine: the kind sets are one-constraint tasks of their own")
        pool = _interleaved([kinds] if isinstance(kinds, str) else list(kinds), split)
    else:
        pool = list(all_tasks())
    wanted_tiers = None if tiers is None else set(tiers)
    wanted_ids = None if task_ids is None else set(task_ids)
    if wanted_ids is not None:
        unknown = wanted_ids - {t.task_id for t in pool}
        if unknown:
            raise ValueError(f"unknown instruct task ids: {sorted(unknown)}")
    return [
        t
        for t in pool
        if (split == "all" or t.split == split)
        and (wanted_tiers is None or t.tier in wanted_tiers)
        and (wanted_ids is None or t.task_id in wanted_ids)
    ]


# ------------------------------------------------------------------------------------------ scoring


def evaluate(task: InstructTask, response: str) -> tuple[bool, ...]:
    """Whether ``response`` (stripped here) satisfies each of the task's rubrics, in order. Never raises."""
    text = response.strip() if isinstance(response, str) else ""
    verdicts = []
    for c in task.constraints:
        try:
            verdicts.append(c.check(text))
        except Exception:  # defensive: a checker bug must fail the rubric, not crash a rollout
            verdicts.append(False)
    return tuple(verdicts)


def critique(task: InstructTask, satisfied: Sequence[bool] | None) -> str:
    """The feedback text: the unmet constraints, or that all were met (``None``: no response yet)."""
    if satisfied is None:
        return "No response was given."
    total = len(task.constraints)
    if all(satisfied):
        return f"All {total} constraints were met."
    unmet = [c.description for c, ok in zip(task.constraints, satisfied, strict=True) if not ok]
    return f"Met {total - len(unmet)} of {total} constraints. Unmet:\n" + "\n".join(f"- {d}" for d in unmet)


# ------------------------------------------------------------------------------------------ the env


class InstructEnv(SingleTaskTextEnv[InstructTask]):
    """Single-agent instruction following (see the module docstring). The observation is ``[task index,
    answered]``; the text the model reads comes from the adapter (``env.unwrapped.arena_text_adapter``)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "arena_instruct_v0", "is_parallelizable": False}

    def __init__(
        self,
        split: str = "train",
        task_ids: Iterable[str] | None = None,
        tiers: Iterable[int] | int | None = None,
        kinds: Iterable[str] | str | None = None,
    ) -> None:
        self.split = split
        self.tiers = None if tiers is None else tuple(int(t) for t in ([tiers] if isinstance(tiers, int) else tiers))
        self.task_ids = None if task_ids is None else tuple(str(t) for t in task_ids)
        self.kinds = None if kinds is None else tuple([kinds] if isinstance(kinds, str) else kinds)
        self.response: str | None = None
        self.satisfied: tuple[bool, ...] | None = None
        super().__init__(
            tasks_for(split, self.tiers, self.task_ids, self.kinds),
            counter_high=1,
            max_text=MAX_RESPONSE_CHARS,
            adapter=InstructAdapter(),
            no_tasks=(
                f"no instruct tasks in split {split!r} with tiers {self.tiers}, ids {self.task_ids}"
                f" and kinds {self.kinds}"
            ),
        )

    @property
    def score(self) -> float:
        """The fraction of rubrics the response satisfied (0.0 before it is given)."""
        if not self.satisfied:
            return 0.0
        return sum(self.satisfied) / len(self.satisfied)

    def _counter(self) -> int:
        return int(self.response is not None)

    def _task_list_name(self) -> str:
        return f"split {self.split!r} of this env"

    def _start_task(self) -> None:
        self.response = None
        self.satisfied = None

    def _answer(self, text: str) -> tuple[float, bool, dict[str, Any]]:
        """Check the stripped response against every rubric; one answer ends the episode."""
        self.response = text.strip()
        self.satisfied = evaluate(self.task, self.response)
        info = {
            "task_id": self.task.task_id,
            "tier": self.task.tier,
            "score": self.score,
            "satisfied": [i for i, ok in enumerate(self.satisfied) if ok],
        }
        return self.score, True, info

    def arena_outcome(self, returns: Mapping[str, float], agent: str) -> str:
        """A win only when the response satisfied every rubric."""
        return "win" if self.satisfied and all(self.satisfied) else "loss"


def _env(view: SeatView) -> InstructEnv:
    env = getattr(view.env, "unwrapped", view.env)
    if not isinstance(env, InstructEnv):
        raise TypeError(f"the instruct adapter needs an InstructEnv, got {type(env).__name__}")
    return env


class InstructAdapter:
    """Text for the instruct arena: the instruction as the observation, the whole answer as the response, the
    unmet constraints as the summary."""

    def rules(self, view: SeatView) -> str:
        return (
            "Follow the writing instruction below. Your score is the fraction of its constraints that your response "
            "meets."
        )

    def observation(self, view: SeatView) -> str:
        return _env(view).task.prompt()

    def legal_moves(self, view: SeatView) -> list[Move]:
        return []

    def action_name(self, view: SeatView, action: Any) -> str:
        if isinstance(action, str):
            words = count_words(action)
            return f"response ({words} word{'s' if words != 1 else ''})"
        return f"action {action!r}"

    def episode_summary(self, view: SeatView) -> str:
        env = _env(view)
        return critique(env.task, env.satisfied)

    def answer_format(self, view: SeatView) -> str:
        return "Reply with the response only."

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        """Always an action: the whole answer, stripped (an empty one simply meets no constraint)."""
        text = answer.strip() if isinstance(answer, str) else ""
        return ParseResult(action=text, move=self.action_name(view, text))

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        env = _env(view)
        satisfied = env.satisfied or (False,) * len(env.task.constraints)
        return {
            "task_id": env.task.task_id,
            "tier": env.task.tier,
            "score": env.score,
            "outcome_key": ",".join(str(i) for i, ok in enumerate(satisfied) if ok),
            "task_text": env.task.prompt(),
            "rubrics": [
                {"description": c.description, "satisfied": bool(ok)}
                for c, ok in zip(env.task.constraints, satisfied, strict=True)
            ],
            "critique": self.episode_summary(view),
        }
