"""The instruct arena: every constraint checker, task generation and splits, reference answers, reward and
critique, the env (PettingZoo api_test), the adapter's details, registration and a trial through the engine."""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena import arenas
from arena.arenas.instruct import (
    FILLERS,
    FORBIDDEN_POOL,
    TOPICS,
    InstructEnv,
    InstructTask,
    all_tasks,
    critique,
    evaluate,
    generate_tasks,
    kind_tasks,
    reference_answer,
    split_of,
    task_by_id,
    tasks_for,
)
from arena.arenas.instruct_constraints import (
    CONFLICTS,
    KINDS,
    Constraint,
    compatible,
    count_keyword,
    count_sentences,
    count_words,
)
from arena.core.api.arena import SeatView
from arena.core.api.backend import GenerationRequest

from ..core.helpers import play, specs

pytestmark = pytest.mark.filterwarnings("ignore:Action space for each agent probably should be:UserWarning")

TASKS = all_tasks()


def view(env: Any) -> SeatView:
    return SeatView(env, "player_0", 0, env.observe("player_0"), None, dict(env.infos.get("player_0", {})))


# ------------------------------------------------------------------------------------------------ counting


def test_counting_words_sentences_and_keywords() -> None:
    assert count_words("Don't stop, well-known 42 times!") == 6
    assert count_words("") == 0
    assert count_sentences("One. Two! Three? Four") == 4
    assert count_sentences("Wait... what?!") == 2
    assert count_sentences('It costs 3.5 euros (see www.example.com). "Really?" he said.') == 3
    assert count_sentences("* apples\n* pears.\n\n***\n\nSECTION 2\n<<A title>>\nDone.") == 3
    assert count_sentences("Main text here.\nP.S. More text.") == 2
    assert count_keyword("Cat, cats and CAT; bobcat.", "cat") == 2


# ------------------------------------------------------------------------------------------------ checkers

CASES: dict[str, tuple[Constraint, list[str], list[str]]] = {
    "max_words": (Constraint("max_words", n=5), ["One two three four five."], ["One two three four five six."]),
    "min_words": (Constraint("min_words", n=3), ["One two three."], ["One two."]),
    "max_sentences": (Constraint("max_sentences", n=2), ["One. Two."], ["One. Two. Three."]),
    "min_sentences": (Constraint("min_sentences", n=2), ["One. Two."], ["Only one sentence here."]),
    "include_keyword": (
        Constraint("include_keyword", words=("collar",)),
        ["Her Collar is red."],
        ["Her collars are red.", "No such word."],
    ),
    "keyword_frequency": (
        Constraint("keyword_frequency", n=3, words=("snow",)),
        ["Snow, snow and more SNOW."],
        ["Snow and snow and snowfall."],
    ),
    "forbidden_words": (
        Constraint("forbidden_words", words=("very", "just")),
        ["Everything is justified and every day."],
        ["It is very cold.", "I JUST left."],
    ),
    "bullets": (
        Constraint("bullets", n=2),
        ["Intro\n* one\n- two\nend", "  * one\n* two"],
        ["* one", "* one\n* two\n* three", "*one\n*two", "***\n***"],
    ),
    "sections": (
        Constraint("sections", n=2),
        ["SECTION 1\nHello.\nSECTION 2\nBye.", "Intro.\nSECTION 1: start\nSECTION 2 end"],
        [
            "SECTION 1\nHello.",
            "SECTION 1\nHello.\nSECTION 2\n",
            "SECTION 2\nA.\nSECTION 1\nB.",
            "section 1\na\nsection 2\nb",
        ],
    ),
    "paragraphs": (
        Constraint("paragraphs", n=3),
        ["One.\n***\nTwo.\n\n***\n\nThree."],
        ["One.\n***\nTwo.", "One.\n***\n***\nThree.", "One.\n***\nTwo.\n***\nThree.\n***\nFour."],
    ),
    "lowercase": (Constraint("lowercase"), ["all small, 123."], ["Not all small.", "123 456"]),
    "uppercase": (Constraint("uppercase"), ["ALL BIG, 123."], ["ALL BIG BUT one.", "!!! 7"]),
    "start_with": (
        Constraint("start_with", phrase="Hello there"),
        ["Hello there. How are you?", "hello there friend"],
        ["Well, hello there.", "Hello, there."],
    ),
    "end_with": (
        Constraint("end_with", phrase="See you soon."),
        ["Bye for now. See you soon.", "BYE. SEE YOU SOON."],
        ["See you soon. Bye.", "See you soon!"],
    ),
    "quotes": (Constraint("quotes"), ['"Hello world."'], ["Hello world.", '"Hello world.', "“Hello world.”"]),
    "json": (
        Constraint("json"),
        ['{"a": 1}', '```json\n{"a": "b"}\n```'],
        ["[1, 2]", "{a: 1}", 'Here: {"a": 1}'],
    ),
    "json_keys": (
        Constraint("json", words=("title", "message")),
        ['{"title": "T", "message": "M", "x": 1}'],
        ['{"title": "T"}', '{"Title": "T", "message": "M"}'],
    ),
    "no_commas": (Constraint("no_commas"), ["No commas at all."], ["One, two.", "Full-width，comma."]),
    "postscript": (
        Constraint("postscript"),
        ["Main text.\n\nP.S. More.", "Main.\np.s. small"],
        ["P.S. Only a postscript.", "Main text. P.S. inline.", "Main.\nP.S."],
    ),
    "title": (Constraint("title"), ["<<My title>>\nText."], ["<My title>\nText.", "<<>>\nText.", "<<a\nb>>"]),
    "placeholders": (
        Constraint("placeholders", n=2),
        ["Dear [name], at [your address]."],
        ["Dear [name].", "Dear [] at [1]."],
    ),
}


def test_every_kind_has_checker_cases() -> None:
    assert {c.kind for c, _, _ in CASES.values()} == set(KINDS)
    assert len(KINDS) >= 15


@pytest.mark.parametrize("case", sorted(CASES))
def test_checker_true_and_false_cases(case: str) -> None:
    constraint, good, bad = CASES[case]
    for text in good:
        assert constraint.check(text), f"{case} should accept {text!r}"
    for text in bad:
        assert not constraint.check(text), f"{case} should reject {text!r}"
    assert not constraint.check(""), f"{case} should reject an empty answer"


def test_checkers_never_raise_and_stay_fast_on_pathological_answers() -> None:
    answers = ["[" + "a" * 4000, "<<" + "a" * 4000, "[" * 100000 + "]" * 100000, '{"a":' * 5000 + "1" + "}" * 5000]
    answers += ["SECTION 1\n" * 400, "*** " * 1000, "P.S. " * 800, "a'" * 2000, "\x00\ud800 é"]
    started = time.perf_counter()
    for text in answers:
        for kind in KINDS:
            assert isinstance(Constraint(kind, n=2, words=("a", "b"), phrase="a").check(text), bool)
    assert time.perf_counter() - started < 2.0


def test_descriptions_are_plain_sentences() -> None:
    assert Constraint("max_words", n=40).description == "Use at most 40 words."
    assert Constraint("include_keyword", words=("collar",)).description == 'Include the word "collar".'
    assert Constraint("forbidden_words", words=("very", "just")).description == 'Do not use the words "very" or "just".'
    assert Constraint("json", words=("title", "message")).description == (
        'Answer with a JSON object only, with the keys "title" and "message".'
    )
    assert Constraint("placeholders", n=1).description.startswith("Include at least 1 placeholder in")
    for kind in KINDS:
        text = Constraint(kind, n=2, words=("w",), phrase="Hi").description
        assert "{" not in text and text[0].isupper() and text[-1] in '.":', (kind, text)


def test_conflicts_are_symmetric_and_respected() -> None:
    for kind, others in CONFLICTS.items():
        assert kind not in others
        for other in others:
            assert kind in CONFLICTS[other]
    assert not compatible(["lowercase"], "uppercase") and not compatible(["json"], "bullets")
    assert compatible(["include_keyword"], "include_keyword") and not compatible(["title"], "title")
    for task in TASKS:
        kinds = [c.kind for c in task.constraints]
        for i, kind in enumerate(kinds):
            assert compatible(kinds[:i] + kinds[i + 1 :], kind) or kind == "include_keyword", task.task_id
        words = [w for c in task.constraints if c.kind in ("include_keyword", "keyword_frequency") for w in c.words]
        assert len(words) == len(set(words)), task.task_id


# ------------------------------------------------------------------------------------------------ tasks


def test_a_few_hundred_tasks_in_four_tiers() -> None:
    assert len(TASKS) == 400
    assert len({t.task_id for t in TASKS}) == len(TASKS)
    assert len({t.prompt() for t in TASKS}) == len(TASKS)
    assert collections.Counter(t.tier for t in TASKS) == {1: 100, 2: 100, 3: 100, 4: 100}
    assert all(len(t.constraints) == t.tier for t in TASKS)
    used = collections.Counter(c.kind for t in TASKS for c in t.constraints)
    assert set(used) == set(KINDS) and min(used.values()) >= 15


def test_prompts_are_short() -> None:
    assert max(len(t.prompt()) for t in TASKS) < 450
    for task in TASKS:
        assert task.prompt().startswith(task.request + "\nConstraints:\n- ")


def test_generation_is_deterministic() -> None:
    again = generate_tasks()
    assert again == TASKS
    assert task_by_id("t1.000") == TASKS[0]
    # Pinned: the first task never changes (the generator is seeded by ids, not by process state).
    assert TASKS[0].prompt() == (
        'Write a short note to a neighbour about a school science fair.\nConstraints:\n- Include the word "volcano".'
    )


_DIGEST = "import hashlib; from arena.arenas.instruct import generate_tasks as g; " + (
    "print(hashlib.sha256(chr(10).join(t.prompt() for t in g()).encode()).hexdigest())"
)


def test_same_tasks_in_another_process_and_hash_seed() -> None:
    """The list does not depend on PYTHONHASHSEED or process state; pinned, so an edit that changes any task
    (and so the meaning of every recorded task id) fails here."""
    here = hashlib.sha256("\n".join(t.prompt() for t in TASKS).encode()).hexdigest()
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", _DIGEST], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == here == "6a69bffe25b89ed4a54ac9912a3959bdec79b7cfc57510d2e4ad8640a99c0307"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_sets_hold_one_satisfiable_constraint_of_their_kind(kind: str) -> None:
    tasks = kind_tasks(kind)
    assert [t.task_id for t in tasks] == [f"{kind}.{k:03d}" for k in range(100)]
    assert all(t.tier == 1 and [c.kind for c in t.constraints] == [kind] for t in tasks)
    assert len({t.prompt() for t in tasks}) == 100
    assert all(all(evaluate(t, reference_answer(t))) for t in tasks)
    assert 8 <= sum(t.split == "test" for t in tasks) <= 32
    assert task_by_id(f"{kind}.042") == tasks[42]


def test_kinds_interleave_and_leave_the_tiers_alone() -> None:
    kinds = ["json", "title", "postscript"]
    every = tasks_for("all", kinds=kinds)
    assert [t.task_id for t in every[:6]] == [
        "json.000",
        "title.000",
        "postscript.000",
        "json.001",
        "title.001",
        "postscript.001",
    ]
    train, test = tasks_for("train", kinds=kinds), tasks_for("test", kinds=kinds)
    assert len(train) + len(test) == 300 and not {t.task_id for t in train} & {t.task_id for t in test}
    assert {c.kind for t in every for c in t.constraints} == set(kinds)
    assert tasks_for("all") == list(TASKS)  # the tiers' tasks (and every recorded id) are unchanged
    env = InstructEnv(split="test", kinds="json")
    assert {t.task_id for t in env.tasks} == {t.task_id for t in kind_tasks("json") if t.split == "test"}
    with pytest.raises(ValueError, match="unknown constraint kind"):
        tasks_for("train", kinds=["haiku"])
    with pytest.raises(ValueError, match="at least one"):
        tasks_for("train", kinds=[])
    with pytest.raises(ValueError, match="twice"):
        tasks_for("train", kinds=["json", "json"])
    with pytest.raises(ValueError, match="do not combine"):
        tasks_for("train", kinds=["json"], tiers=[1])
    assert tasks_for("test", kinds="json") == [t for t in kind_tasks("json") if t.split == "test"]
    # A pool prefix of the training split holds the kinds within one task of each other.
    for n in (8, 30, 64, 99):
        counts = collections.Counter(t.constraints[0].kind for t in train[:n])
        assert max(counts.values()) - min(counts.values()) <= 1, (n, counts)
    with pytest.raises(KeyError):
        task_by_id("json.100")


def test_combined_kind_sets_hold_one_constraint_of_each_kind_in_order() -> None:
    """``a+b`` kind sets: the multi-constraint testbed where HeRL's rubric lists say more than the instruction."""
    tasks = kind_tasks("lowercase+min_words")
    assert [t.task_id for t in tasks] == [f"lowercase+min_words.{k:03d}" for k in range(100)]
    assert all(t.tier == 2 and [c.kind for c in t.constraints] == ["lowercase", "min_words"] for t in tasks)
    assert len({t.prompt() for t in tasks}) == 100
    assert all(all(evaluate(t, reference_answer(t))) for t in tasks)
    assert task_by_id("lowercase+min_words.042") == tasks[42]
    mixed = tasks_for("test", kinds=["quotes", "lowercase+min_words"])
    assert {len(t.constraints) for t in mixed} == {1, 2}
    assert [t.task_id.rpartition(".")[0] for t in mixed[:2]] == ["quotes", "lowercase+min_words"]
    env = InstructEnv(split="test", kinds=["uppercase+no_commas"])
    assert all(t.task_id.startswith("uppercase+no_commas.") for t in env.tasks)
    with pytest.raises(ValueError, match="cannot join"):
        kind_tasks("lowercase+uppercase")  # conflicting cases
    with pytest.raises(ValueError, match="cannot join"):
        kind_tasks("quotes+quotes")
    with pytest.raises(ValueError, match="unknown constraint kind 'haiku'"):
        tasks_for("train", kinds=["lowercase+haiku"])


def test_split_is_a_stable_hash_of_the_id() -> None:
    train, test = tasks_for("train"), tasks_for("test")
    assert {t.task_id for t in train} | {t.task_id for t in test} == {t.task_id for t in TASKS}
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert 0.12 < len(test) / len(TASKS) < 0.28
    assert len(tasks_for("all")) == len(TASKS)
    assert all(t.split == split_of(t.task_id) for t in TASKS)
    for tier in (1, 2, 3, 4):
        assert any(t.tier == tier for t in test)
    with pytest.raises(ValueError, match="split"):
        tasks_for("dev")
    with pytest.raises(ValueError, match="unknown"):
        tasks_for("all", task_ids=["t9.999"])


def test_every_reference_answer_scores_one() -> None:
    for task in TASKS:
        answer = reference_answer(task)
        assert all(evaluate(task, answer)), (task.task_id, task.prompt(), answer)


def test_upper_limits_bind_near_the_reference() -> None:
    """The generated upper limits are not vacuous: a much longer answer breaks them."""
    for task in TASKS:
        for c in task.constraints:
            if c.kind == "max_words":
                assert 20 <= c.n <= 200 and not c.check(" ".join(["word"] * (c.n + 1)))
            if c.kind == "max_sentences":
                assert 2 <= c.n <= 20 and not c.check("Yes. " * (c.n + 1))


def test_fillers_avoid_forbidden_words_and_markers() -> None:
    for sentence in FILLERS:
        assert "," not in sentence and not any(count_keyword(sentence, w) for w in FORBIDDEN_POOL)
    keywords = {w for _, words in TOPICS for w in words}
    assert not keywords & set(FORBIDDEN_POOL)


# ------------------------------------------------------------------------------------------------ scoring


def _task(*constraints: Constraint) -> InstructTask:
    return InstructTask("x.0", len(constraints), "a lost cat", "a short note to a neighbour", "Write.", constraints)


def test_reward_is_the_fraction_satisfied_and_critique_lists_the_unmet() -> None:
    task = _task(
        Constraint("max_words", n=5),
        Constraint("include_keyword", words=("collar",)),
        Constraint("no_commas"),
        Constraint("lowercase"),
    )
    assert evaluate(task, "  the collar is red.  ") == (True, True, True, True)
    assert critique(task, evaluate(task, "the collar is red.")) == "All 4 constraints were met."
    verdicts = evaluate(task, "The collar, sadly, was found near the old garden shed.")
    assert verdicts == (False, True, False, False)
    assert critique(task, verdicts) == (
        "Met 1 of 4 constraints. Unmet:\n- Use at most 5 words.\n- Do not use any commas.\n"
        "- Write everything in lowercase letters; use no capitals."
    )
    assert critique(task, None) == "No response was given."


@pytest.mark.parametrize("combo", list(itertools.product([0, 1], repeat=3)))
def test_env_reward_equals_fraction(combo: tuple[int, int, int]) -> None:
    """Every subset of three rubrics met gives reward = subset size / 3, and outcome_key names the subset."""
    env = InstructEnv(split="all")
    env.reset(options={"task_id": "t1.000"})
    task = _task(Constraint("include_keyword", words=("alpha",)), Constraint("uppercase"), Constraint("no_commas"))
    env.task = task
    words = ["ALPHA" if combo[0] else "BETA", "GAMMA" if combo[1] else "gamma"]
    answer = " ".join(words) + ("." if combo[2] else ", DONE." if combo[1] else ", done.")
    env.step(answer)
    assert env.rewards["player_0"] == pytest.approx(sum(combo) / 3)
    details = env.arena_text_adapter.episode_details(view(env))
    assert details["outcome_key"] == ",".join(str(i) for i, bit in enumerate(combo) if bit)
    assert [r["satisfied"] for r in details["rubrics"]] == [bool(b) for b in combo]
    unmet = [c.description for c, bit in zip(task.constraints, combo, strict=True) if not bit]
    assert all(d in details["critique"] for d in unmet) and details["critique"].count("\n- ") == len(unmet)


# ------------------------------------------------------------------------------------------------ the env


def test_pettingzoo_api() -> None:
    api_test(InstructEnv(), num_cycles=5)
    api_test(InstructEnv(split="test", tiers=[4]), num_cycles=5)


def test_reset_picks_the_task_by_seed_or_id() -> None:
    env = InstructEnv(split="test")
    assert all(t.split == "test" for t in env.tasks) and env.tasks == tasks_for("test")
    env.reset(seed=len(env.tasks) + 3)
    assert env.task is env.tasks[3] and list(env.observe("player_0")) == [3, 0]
    env.reset(options={"task_id": env.tasks[1].task_id})
    assert env.task is env.tasks[1]
    train_id = tasks_for("train")[0].task_id
    with pytest.raises(ValueError, match="not in split"):
        env.reset(options={"task_id": train_id})
    chosen = InstructEnv(split="all", task_ids=["t2.005", "t1.007"])
    assert [t.task_id for t in chosen.tasks] == ["t1.007", "t2.005"]
    chosen.reset(seed=1)
    assert chosen.task.task_id == "t2.005"
    with pytest.raises(ValueError, match="no instruct tasks"):
        InstructEnv(split="test", task_ids=[train_id])


def test_reference_answer_through_the_env_wins() -> None:
    env = InstructEnv(split="all")
    env.reset(options={"task_id": "t4.042"})
    adapter = env.arena_text_adapter
    parsed = adapter.parse_answer(view(env), "\n  " + reference_answer(env.task) + "  \n")
    assert parsed.valid and parsed.action == reference_answer(env.task)
    env.step(parsed.action)
    assert env.terminations["player_0"] and env.rewards["player_0"] == 1.0
    assert env.arena_outcome({"player_0": 1.0}, "player_0") == "win"
    details = adapter.episode_details(view(env))
    n = len(env.task.constraints)
    assert details == {
        "task_id": "t4.042",
        "tier": 4,
        "score": 1.0,
        "outcome_key": ",".join(str(i) for i in range(n)),
        "task_text": env.task.prompt(),
        "rubrics": [{"description": c.description, "satisfied": True} for c in env.task.constraints],
        "critique": f"All {n} constraints were met.",
    }
    assert json.loads(json.dumps(details)) == details
    assert adapter.episode_summary(view(env)) == details["critique"]


def test_empty_answer_scores_zero_and_loses() -> None:
    env = InstructEnv(split="all")
    env.reset(options={"task_id": "t3.028"})
    parsed = env.arena_text_adapter.parse_answer(view(env), "   ")
    assert parsed.valid and parsed.action == ""
    env.step(parsed.action)
    assert env.rewards["player_0"] == 0.0 and env.arena_outcome({"player_0": 0.0}, "player_0") == "loss"
    details = env.arena_text_adapter.episode_details(view(env))
    assert details["outcome_key"] == "" and not any(r["satisfied"] for r in details["rubrics"])
    assert details["critique"].startswith("Met 0 of 3 constraints. Unmet:")


def test_adapter_texts_before_an_answer() -> None:
    env = InstructEnv()
    env.reset(seed=4)
    adapter = env.arena_text_adapter
    assert adapter.legal_moves(view(env)) == [] and "fraction of its constraints" in adapter.rules(view(env))
    assert adapter.observation(view(env)) == env.task.prompt()
    assert adapter.answer_format(view(env)) == "Reply with the response only."
    assert adapter.action_name(view(env), "One two three.") == "response (3 words)"
    assert adapter.episode_summary(view(env)) == "No response was given."
    details = adapter.episode_details(view(env))
    assert details["score"] == 0.0 and details["outcome_key"] == "" and len(details["rubrics"]) == env.task.tier


def test_parse_answer_never_raises() -> None:
    env = InstructEnv()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    pieces = ["*", "* ", "\n", "***", "SECTION 1", "P.S.", "<<", ">>", "{", '"', ",", "é", "word", " "]
    for _ in range(200):
        answer = "".join(pieces[int(i)] for i in rng.integers(len(pieces), size=int(rng.integers(0, 15))))
        parsed = env.arena_text_adapter.parse_answer(view(env), answer)
        assert isinstance(parsed.action, str)
        assert all(isinstance(v, bool) for v in evaluate(env.task, parsed.action))


def test_registered_as_instruct() -> None:
    env = arenas.make("instruct", split="test")
    assert isinstance(env.unwrapped, InstructEnv) and env.unwrapped.split == "test"


# ------------------------------------------------------------------------------------------- through the engine

_BY_PROMPT = {t.prompt(): t for t in TASKS}
_INSTRUCTION = re.compile(r"Current observation:\n(.*?)\n\nReply with the response only\.", re.DOTALL)


def reference_responder(request: GenerationRequest, rng: np.random.Generator) -> str:
    """Answers every instruct prompt with the task's reference answer."""
    match = _INSTRUCTION.search(request.messages[-1].content)
    if request.purpose != "action" or match is None:
        return "<remark>nothing to add</remark>"
    return reference_answer(_BY_PROMPT[match.group(1).strip()])


def test_trials_through_the_rollout_engine() -> None:
    trial_specs = specs(3, arena="instruct", seats=("model:scripted",), arena_kwargs={"split": "test"})
    trials, _, _ = play(trial_specs, responder=reference_responder)
    test_tasks = tasks_for("test")
    for trial in trials:
        (step,) = trial.final.steps
        task = test_tasks[trial.spec.seed % len(test_tasks)]
        assert isinstance(step.action, str) and not step.invalid
        assert trial.final.returns["player_0"] == 1.0 and trial.final.outcomes["player_0"] == "win"
        details = trial.final.details["player_0"]
        assert details["task_id"] == task.task_id and details["task_text"] == task.prompt()
        assert trial.final.summaries["player_0"] == f"All {task.tier} constraints were met."
        prompt = step.prompt[-1].content
        assert task.prompt() in prompt and "Legal moves:" not in prompt
        assert prompt.rstrip().endswith("Reply with the response only.")


def test_revise_configs_are_twins_on_the_kind_sets() -> None:
    """HeRL's testbed (docs/testbeds.md section 8): the HeRL config and its GRPO twin differ only in the method."""
    from arena.core.config.loader import load_config
    from arena.core.learn.run_config import TrainConfig
    from arena.core.models.smol.revise import KINDS

    herl, grpo = (load_config(TrainConfig, f"instruct_revise_{m}") for m in ("herl", "grpo"))
    assert herl.arena_kwargs == grpo.arena_kwargs == {"split": "train", "kinds": list(KINDS)}
    assert herl.eval.arena_kwargs == {"split": "test", "kinds": list(KINDS)}
    assert herl.eval.games == len(tasks_for("test", kinds=KINDS))
    assert herl.learners[0].plugins == ["herl", "grpo"] and grpo.learners[0].plugins == ["grpo"]
    assert herl.learners[0].model == grpo.learners[0].model == "smollm2-revise"
    assert_same_but_the_method(herl, grpo)


def assert_same_but_the_method(a: Any, b: Any) -> None:
    """Two run configs are equal once each one's learner plugins and options are left out."""
    import attrs

    for x, y in ((a, b), (a.learners[0], b.learners[0])):
        left, right = attrs.asdict(x), attrs.asdict(y)
        for key in ("learners", "plugins", "options"):
            left.pop(key, None)
            right.pop(key, None)
        assert left == right


def test_golf_configs_are_twins_of_herls_testbed_with_golfs_advantages() -> None:
    """GOLF on HeRL's testbed: the GOLF config and its GRPO twin differ only in the method, share GOLF's mean-centred
    advantages, and are HeRL's configs in everything but the learner's plugins and options."""
    from arena.core.config.loader import load_config
    from arena.core.learn.run_config import TrainConfig
    from arena.plugins import golf as golf_plugin

    golf, twin, herl = (load_config(TrainConfig, f"instruct_revise_{m}") for m in ("golf", "golf_grpo", "herl"))
    assert golf.learners[0].plugins == ["golf", "grpo"] and twin.learners[0].plugins == ["grpo"]
    assert golf.learners[0].options["grpo"] == twin.learners[0].options["grpo"] == {"std_norm": False}
    opts = golf_plugin.settings(golf.learners[0].options)
    assert (opts.n, opts.inject, opts.train_refiner) == (8, True, True)
    assert golf_plugin.threshold_for(golf.arena, opts.threshold) == 0.25
    for other in (twin, herl):
        assert_same_but_the_method(golf, other)


def test_pairs_configs_are_twins_on_the_pairs_kind_sets() -> None:
    """HeRL's naive-ablation testbed (docs/testbeds.md section 8): the HeRL config and its GRPO twin differ only in
    the method, on the kind sets ``smollm2-revise-pairs`` was taught, every held-out task evaluated once."""
    from arena.core.config.loader import load_config
    from arena.core.learn.run_config import TrainConfig
    from arena.core.models.smol.revise_pairs import KINDS, NAME

    herl, grpo = (load_config(TrainConfig, f"instruct_pairs_{m}") for m in ("herl", "grpo"))
    assert herl.arena_kwargs == grpo.arena_kwargs == {"split": "train", "kinds": list(KINDS)}
    assert herl.eval.arena_kwargs == {"split": "test", "kinds": list(KINDS)}
    assert herl.eval.games == len(tasks_for("test", kinds=KINDS))
    assert herl.learners[0].plugins == ["herl", "grpo"] and grpo.learners[0].plugins == ["grpo"]
    assert herl.learners[0].model == grpo.learners[0].model == NAME
    assert herl.learners[0].options["herl"]["train_context"] == "original"
    assert_same_but_the_method(herl, grpo)


def test_lowercase_configs_are_twins_on_the_two_lowercase_kind_sets() -> None:
    """HeRL's naive-ablation testbed narrowed to the kind sets where the premise holds (docs/testbeds.md section 8):
    the pairs configs in everything but the kind sets and the evaluation, which plays every held-out task 4 times."""
    from arena.core.config.loader import load_config
    from arena.core.learn.run_config import TrainConfig

    kinds = ["lowercase+min_words", "lowercase+min_sentences"]
    herl, grpo = (load_config(TrainConfig, f"instruct_lowercase_{m}") for m in ("herl", "grpo"))
    pairs = load_config(TrainConfig, "instruct_pairs_herl")
    assert herl.arena_kwargs == grpo.arena_kwargs == {"split": "train", "kinds": kinds}
    assert herl.eval.arena_kwargs == {"split": "test", "kinds": kinds}
    assert herl.eval.games == 4 * len(tasks_for("test", kinds=kinds))
    assert herl.task_pool <= len(tasks_for("train", kinds=kinds))
    assert herl.learners[0].plugins == ["herl", "grpo"] and grpo.learners[0].plugins == ["grpo"]
    assert herl.learners == pairs.learners
    assert_same_but_the_method(herl, grpo)
