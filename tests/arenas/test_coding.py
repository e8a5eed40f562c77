"""The coding arena: the generated tasks, the sandboxed checker, the env, its text adapter, and a trial through
the rollout engine."""

from __future__ import annotations

import collections
import re
import textwrap
import time
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

from arena.arenas.coding import CodingEnv, check_solution, check_solutions, extract_code
from arena.arenas.coding_tasks import (
    N_TESTS,
    TASK_FAMILIES,
    all_tasks,
    build_task,
    split_of,
    task_by_id,
    tasks_for,
)
from arena.core.api.arena import SeatView
from arena.core.api.backend import GenerationRequest

from ..core.helpers import play, specs

pytestmark = pytest.mark.filterwarnings("ignore:Action space for each agent probably should be:UserWarning")

TASKS = all_tasks()
FAMILIES = sorted({t.family for t in TASKS})
SUM3 = task_by_id("sum_multiples.k3")


def view(env: Any) -> SeatView:
    return SeatView(env, "player_0", 0, env.observe("player_0"), None, dict(env.infos.get("player_0", {})))


# ------------------------------------------------------------------------------------------------- the tasks


def test_a_few_hundred_unique_tasks_in_three_tiers() -> None:
    assert len(TASKS) >= 250
    assert len({t.task_id for t in TASKS}) == len(TASKS)
    assert len({t.name for t in TASKS}) == len(TASKS)
    tiers = collections.Counter(t.tier for t in TASKS)
    assert set(tiers) == {1, 2, 3} and min(tiers.values()) >= 30
    per_family = collections.Counter(t.family for t in TASKS)
    assert len(per_family) >= 30 and sum(n >= 3 for n in per_family.values()) >= 25


def test_every_task_is_well_formed_and_small() -> None:
    for task in TASKS:
        assert len(task.examples) == 2 and 6 <= len(task.tests) <= 10 == N_TESTS + 2, task.task_id
        calls = [repr(c.args) for c in (*task.examples, *task.tests)]
        assert len(set(calls)) == len(calls), f"{task.task_id}: repeated inputs"
        assert task.reference.count("\n") <= 15 and f"def {task.name}(" in task.reference
        assert task.signature in task.reference and task.signature in task.prompt()
        assert len(task.prompt()) < 600 and task.reference not in task.prompt()


def test_tasks_are_deterministic() -> None:
    rebuilt = [build_task(family, tier, v) for family, tier, make in TASK_FAMILIES for v in make()]
    assert [(t.task_id, repr(t.examples), repr(t.tests), t.reference) for t in rebuilt] == [
        (t.task_id, repr(t.examples), repr(t.tests), t.reference) for t in TASKS
    ]


def test_split_is_a_stable_hash_of_the_id() -> None:
    train, test = tasks_for("train"), tasks_for("test")
    assert {t.task_id for t in train} | {t.task_id for t in test} == {t.task_id for t in TASKS}
    assert not {t.task_id for t in train} & {t.task_id for t in test}
    assert 0.12 < len(test) / len(TASKS) < 0.28
    assert all(t.split == split_of(t.task_id) for t in TASKS)
    # Pinned: the split of an id never changes (adding tasks or families cannot move one).
    pinned = {t.task_id: t.split for t in TASKS[::40]}
    assert pinned == {i: split_of(i) for i in pinned}
    assert split_of("sum_multiples.k3") == "test" and split_of("sum_multiples.k7") == "train"
    assert split_of("a.new.task.added.later") in ("train", "test")


def test_tasks_for_filters_by_split_and_tier() -> None:
    assert all(t.split == "test" and t.tier == 3 for t in tasks_for("test", [3]))
    assert len(tasks_for("all", [1, 2])) == sum(t.tier in (1, 2) for t in TASKS)
    with pytest.raises(ValueError, match="split"):
        tasks_for("validation")


@pytest.mark.parametrize("family", FAMILIES)
def test_reference_solutions_pass_and_constant_answers_fail(family: str) -> None:
    """One sandbox run per family: every reference passes every hidden test; a function that returns a fixed
    value (the first test's answer) does not, so the tests discriminate."""
    tasks = [t for t in TASKS if t.family == family]
    constants = [(t, f"def {t.name}(*args):\n    return {t.tests[0].expected!r}\n") for t in tasks]
    results = check_solutions([(t, t.reference) for t in tasks] + constants, per_test_s=2.0)
    for task, result in zip(tasks, results[: len(tasks)], strict=True):
        assert result.all_passed, f"{task.task_id}: {result.feedback()}"
    for task, result in zip(tasks, results[len(tasks) :], strict=True):
        assert not result.all_passed, f"{task.task_id}: a constant answer passes every test"


# ------------------------------------------------------------------------------------------------ the checker


def test_partly_wrong_solution_scores_the_fraction_and_shows_failures() -> None:
    assert SUM3.tests[0].args == ([],)
    code = "def sum_multiples_of_3(nums):\n    return sum(x for x in nums if x % 3 == 0) if nums else 1\n"
    result = check_solution(SUM3, code)
    assert result.passed == tuple(range(1, len(SUM3.tests))) and result.score == pytest.approx(7 / 8)
    feedback = result.feedback()
    assert feedback.startswith("Passed 7 of 8 tests.") and "sum_multiples_of_3([]): expected 0, got 1" in feedback


def test_types_must_match() -> None:
    code = "def sum_multiples_of_3(nums):\n    return float(sum(x for x in nums if x % 3 == 0))\n"
    assert check_solution(SUM3, code).score == 0.0
    counter = task_by_id("word_count.counts")
    code = "import collections\ndef word_counts(s):\n    return collections.Counter(s.lower().split())\n"
    assert check_solution(counter, code).all_passed  # a Counter is a dict


def test_errors_and_tracebacks_are_feedback() -> None:
    result = check_solution(SUM3, "def sum_multiples_of_3(nums):\n    return nums[0] // 0\n")
    assert result.score == 0.0
    text = result.feedback()
    assert "ZeroDivisionError" in text or "IndexError" in text
    assert 'File "solution.py", line 2, in sum_multiples_of_3' in text and len(text) <= 1500


@pytest.mark.parametrize(
    "code,needle",
    [
        ("def sum_multiples_of_3(nums)\n    return 0\n", "SyntaxError"),
        ("def something_else(nums):\n    return 0\n", "no function named sum_multiples_of_3"),
        ("import os\nos.system('true')\n", "SandboxViolation"),
        ("", "no function named"),
    ],
)
def test_unusable_code_scores_zero_with_feedback(code: str, needle: str) -> None:
    result = check_solution(SUM3, code)
    assert result.score == 0.0 and result.passed == () and needle in result.feedback()


def test_endless_loops_score_zero_without_hanging() -> None:
    started = time.monotonic()
    in_function = check_solution(SUM3, "def sum_multiples_of_3(nums):\n    while True:\n        pass\n", timeout_s=2)
    at_import = check_solution(SUM3, "while True:\n    pass\n", timeout_s=2)
    assert time.monotonic() - started < 8
    assert in_function.score == 0.0 and "timed out" in in_function.feedback()
    assert at_import.score == 0.0 and "timed out" in at_import.feedback()


def test_a_hang_in_c_code_stops_the_run_and_fails_the_rest() -> None:
    """``sum(range(...))`` never returns to the interpreter, so the per-test alarm cannot fire: the run's wall clock
    ends it, the first test's result survives and the others are reported as not run."""
    code = "def sum_multiples_of_3(nums):\n    return 0 if not nums else sum(range(10**12))\n"
    started = time.monotonic()
    result = check_solution(SUM3, code, timeout_s=1.0)
    assert time.monotonic() - started < 5
    assert result.passed == (0,) and result.stopped == "timeout"
    feedback = result.feedback()
    assert "The run was stopped (time limit)." in feedback and "did not run" in feedback


def test_the_checker_survives_a_memory_hog_and_prints() -> None:
    code = "def sum_multiples_of_3(nums):\n    print('noise ' * 100)\n    x = bytearray(4 * 1024**3)\n    return 0\n"
    result = check_solution(SUM3, code)
    assert result.score == 0.0 and "MemoryError" in result.feedback()


# ----------------------------------------------------------------------------------------------- parse_answer


@pytest.mark.parametrize(
    "answer,expected",
    [
        ("Here:\n```python\ndef f():\n    return 1\n```\nDone.", "def f():\n    return 1"),
        ("```python\nx = 1\n```\nBetter:\n```python\ndef f():\n    return 2\n```", "def f():\n    return 2"),
        ("```\ndef f():\n    return 3\n```", "def f():\n    return 3"),
        ("```py\ndef f(): return 4\n```\n```\noutput: 4\n```", "def f(): return 4"),
        ("I think:\nimport math\n\ndef f():\n    return math.pi", "import math\n\ndef f():\n    return math.pi"),
        ("From the spec, we can write\ndef f():\n    return 5", "def f():\n    return 5"),
        ("```python\ndef f():\n    return 6", "def f():\n    return 6"),
        ("I don't know.", "I don't know."),
        ("", ""),
    ],
)
def test_parse_answer_extracts_the_code(answer: str, expected: str) -> None:
    env = CodingEnv()
    env.reset(seed=0)
    parsed = env.arena_text_adapter.parse_answer(view(env), answer)
    assert parsed.valid or answer == ""
    assert parsed.action == expected == extract_code(answer)


def test_parse_answer_never_raises() -> None:
    env = CodingEnv()
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    pieces = ["```", "```python", "\n", "def ", "f(x):", " return x", "import os", "`", "from a import b", "é"]
    for _ in range(300):
        answer = "".join(pieces[int(i)] for i in rng.integers(len(pieces), size=int(rng.integers(0, 12))))
        parsed = env.arena_text_adapter.parse_answer(view(env), answer)
        assert isinstance(parsed.action, str)


# ------------------------------------------------------------------------------------------------- the env


def test_pettingzoo_api() -> None:
    api_test(CodingEnv(), num_cycles=5)
    api_test(CodingEnv(split="test", tiers=[2], max_attempts=2), num_cycles=5)


def test_reset_picks_the_task_by_seed_or_id() -> None:
    env = CodingEnv(split="test", tiers=[1])
    assert all(t.split == "test" and t.tier == 1 for t in env.tasks)
    env.reset(seed=len(env.tasks) + 2)
    assert env.task is env.tasks[2] and list(env.observe("player_0")) == [2, 1]
    env.reset(options={"task_id": env.tasks[1].task_id})
    assert env.task is env.tasks[1]
    with pytest.raises(ValueError, match="not in split"):
        env.reset(options={"task_id": "sum_multiples.k7"})
    with pytest.raises(ValueError, match="no coding tasks"):
        CodingEnv(tiers=[7])


def _solve(env: CodingEnv, code: str) -> None:
    env.step(code)


def test_correct_reference_scores_one_and_wins() -> None:
    env = CodingEnv(split="all")
    env.reset(options={"task_id": "brackets.three"})
    _solve(env, env.task.reference)
    assert env.terminations["player_0"] and env.rewards["player_0"] == 1.0
    assert env.arena_outcome({"player_0": 1.0}, "player_0") == "win"
    adapter = env.arena_text_adapter
    n = len(env.task.tests)
    assert adapter.episode_summary(view(env)) == f"All {n} hidden tests passed."
    details = adapter.episode_details(view(env))
    assert {k: v for k, v in details.items() if k not in ("task_text", "rubrics", "critique")} == {
        "task_id": "brackets.three",
        "tier": 3,
        "family": "brackets",
        "passed": list(range(n)),
        "total": n,
        "score": 1.0,
        "attempts": 1,
        "outcome_key": ",".join(str(i) for i in range(n)),
    }


def test_episode_details_carry_task_text_rubrics_and_critique() -> None:
    """One rubric per hidden test (the assertion as text) with the last attempt's verdict; the critique is the
    feedback; none of it is in the model's prompt (hidden tests stay hidden)."""
    env = CodingEnv(split="all")
    env.reset(options={"task_id": "sum_multiples.k3"})
    adapter = env.arena_text_adapter
    before = adapter.episode_details(view(env))
    assert before["task_text"] == SUM3.prompt() and before["critique"] == "No code was submitted."
    assert [r["satisfied"] for r in before["rubrics"]] == [False] * len(SUM3.tests)
    prompt = adapter.rules(view(env)) + adapter.observation(view(env)) + adapter.answer_format(view(env))
    _solve(env, "def sum_multiples_of_3(nums):\n    return sum(x for x in nums if x % 3 == 0) if nums else 1\n")
    details = adapter.episode_details(view(env))
    assert details["task_text"] == SUM3.prompt()
    assert details["rubrics"] == [
        {"description": f"{case.call('sum_multiples_of_3')} == {case.expected!r}", "satisfied": i != 0}
        for i, case in enumerate(SUM3.tests)
    ]
    assert details["rubrics"][0]["description"] == "sum_multiples_of_3([]) == 0"
    assert details["critique"] == adapter.episode_summary(view(env)) and details["critique"].startswith("Passed 7 of 8")
    assert details["outcome_key"] == "1,2,3,4,5,6,7" and details["score"] == pytest.approx(7 / 8)
    assert not any(r["description"] in prompt for r in details["rubrics"])


def test_wrong_solution_gives_fraction_loss_and_feedback() -> None:
    env = CodingEnv(split="all")
    env.reset(options={"task_id": "sum_multiples.k3"})
    _solve(env, "def sum_multiples_of_3(nums):\n    return sum(x for x in nums if x % 3 == 0) if nums else 1\n")
    assert env.terminations["player_0"] and env.rewards["player_0"] == pytest.approx(7 / 8)
    assert env.arena_outcome({"player_0": 7 / 8}, "player_0") == "loss"
    details = env.arena_text_adapter.episode_details(view(env))
    assert details["passed"] == [1, 2, 3, 4, 5, 6, 7] and details["outcome_key"] == "1,2,3,4,5,6,7"
    assert "expected 0, got 1" in env.arena_text_adapter.episode_summary(view(env))


@pytest.mark.parametrize("code", ["def oops(:\n", "while True:\n    pass\n"], ids=["syntax", "endless"])
def test_broken_code_is_a_failed_attempt_not_a_crash(code: str) -> None:
    env = CodingEnv(split="all", timeout_s=2.0)
    env.reset(options={"task_id": "sum_multiples.k3"})
    _solve(env, code)
    assert env.terminations["player_0"] and env.rewards["player_0"] == 0.0
    summary = env.arena_text_adapter.episode_summary(view(env))
    assert summary.startswith("Passed 0 of 8 tests.") and ("SyntaxError" in summary or "timed out" in summary)


def test_max_attempts_continues_after_a_failure_with_feedback() -> None:
    env = CodingEnv(split="all", max_attempts=2)
    env.reset(options={"task_id": "sum_multiples.k3"})
    adapter = env.arena_text_adapter
    _solve(env, "def sum_multiples_of_3(nums):\n    return 0\n")
    assert not env.terminations["player_0"] and env.rewards["player_0"] == 0.0
    assert env.agent_selection == "player_0" and list(env.observe("player_0")) == [env.task_index, 1]
    text = adapter.observation(view(env))
    assert text.startswith(env.task.prompt()) and "Your attempt 1 of 2: Passed" in text and "Attempts left: 1" in text
    _solve(env, env.task.reference)
    assert env.terminations["player_0"] and env.rewards["player_0"] == 1.0
    assert adapter.episode_details(view(env))["attempts"] == 2


def test_max_attempts_exhausted_rewards_the_last_attempt() -> None:
    env = CodingEnv(split="all", max_attempts=2)
    env.reset(options={"task_id": "sum_multiples.k3"})
    _solve(env, "def sum_multiples_of_3(nums):\n    return 0\n")
    _solve(env, "def sum_multiples_of_3(nums):\n    return sum(x for x in nums if x % 3 == 0) if nums else 1\n")
    assert env.terminations["player_0"] and env.rewards["player_0"] == pytest.approx(7 / 8)
    assert env._cumulative_rewards["player_0"] == pytest.approx(7 / 8)


def test_adapter_texts() -> None:
    env = CodingEnv(max_attempts=3)
    env.reset(seed=4)
    adapter = env.arena_text_adapter
    assert "up to 3 attempts" in adapter.rules(view(env)) and adapter.legal_moves(view(env)) == []
    assert adapter.observation(view(env)) == env.task.prompt()
    assert "```python" in adapter.answer_format(view(env))
    assert adapter.action_name(view(env), "def f():\n    pass") == "code (2 lines)"
    assert adapter.episode_summary(view(env)) == "No code was submitted."


# ------------------------------------------------------------------------------------------- through the engine

_SIGNATURE = re.compile(r"Write a Python function `(def [^`]+)`")
_REFERENCES = {t.signature: t.reference for t in TASKS}


def reference_responder(request: GenerationRequest, rng: np.random.Generator) -> str:
    """Answers every coding prompt with the task's reference solution in a fenced block."""
    match = _SIGNATURE.search(request.messages[-1].content)
    if request.purpose != "action" or match is None:
        return "<remark>nothing to add</remark>"
    return f"Here is my solution.\n```python\n{_REFERENCES[match.group(1)]}```\n"


def test_trials_through_the_rollout_engine() -> None:
    trial_specs = specs(3, arena="coding", seats=("model:scripted",), arena_kwargs={"split": "test"})
    trials, _, _ = play(trial_specs, responder=reference_responder)
    test_tasks = tasks_for("test")
    for trial in trials:
        (step,) = trial.final.steps
        task = test_tasks[trial.spec.seed % len(test_tasks)]
        assert isinstance(step.action, str) and f"def {task.name}(" in step.action and not step.invalid
        assert trial.final.returns["player_0"] == 1.0 and trial.final.outcomes["player_0"] == "win"
        assert trial.final.details["player_0"]["task_id"] == task.task_id
        assert trial.final.summaries["player_0"] == f"All {len(task.tests)} hidden tests passed."
        prompt = step.prompt[-1].content
        assert task.prompt() in prompt and "Legal moves:" not in prompt
        assert prompt.rstrip().endswith("Write the complete function in one ```python code block.")


def test_the_block_that_defines_the_function_is_scored_not_a_later_demo() -> None:
    env = CodingEnv()
    env.reset(seed=0)
    name = env.task.name
    answer = f"```python\ndef {name}(*args):\n    return 1\n```\n\nUsage:\n```python\nassert {name}(2) == 1\n```"
    parsed = env.arena_text_adapter.parse_answer(view(env), answer)
    assert parsed.action == f"def {name}(*args):\n    return 1"
    assert extract_code(answer) == f"assert {name}(2) == 1"  # without the name: the last block, as before
    assert extract_code("```python\nx = 1\n```", "missing") == "x = 1"  # no block defines it: the last one


# ------------------------------------------------------------------------------------- reward hacking the harness
# Each attacker knows every hidden answer (the worst case) but its function does not return them: it tries to get
# them counted through another channel. Each must score 0.


def _answers(task: Any) -> list[str]:
    return [repr(case.expected) for case in task.tests]


def test_fake_result_lines_on_stdout_score_nothing() -> None:
    answers = _answers(SUM3)
    lines = [f'@@result {{"unit": 0, "test": {t}, "got": {a!r}}}' for t, a in enumerate(answers)]
    lines += [repr((t, "got", a)) for t, a in enumerate(answers)]
    text = "\n".join(lines) + "\n"
    code = f"import os, sys\nos.write(1, {text!r}.encode())\nsys.__stdout__.write({text!r})\nsys.__stdout__.flush()\n"
    code += "def sum_multiples_of_3(nums):\n    return None\n"
    result = check_solution(SUM3, code)
    assert result.score == 0.0 and result.total == len(SUM3.tests)


def test_replacing_harness_functions_through_sys_modules_scores_nothing() -> None:
    answers = [case.expected for case in SUM3.tests]
    code = textwrap.dedent(
        f"""
        import builtins, json, os, sys
        ANSWERS = {answers!r}
        calls = [0]
        class Box:
            pass
        def fake(*args, **kwargs):
            i = calls[0]; calls[0] += 1
            return repr(ANSWERS[i % len(ANSWERS)])
        main = sys.modules["__main__"]
        for name in ("plain", "emit", "repr", "_main"):
            setattr(main, name, fake)
        builtins.repr = fake
        json.dumps = fake
        sys.modules["ast"].literal_eval = lambda text: ANSWERS
        def sum_multiples_of_3(nums):
            return Box()
        """
    )
    result = check_solution(SUM3, code)
    assert result.score == 0.0 and result.total == len(SUM3.tests), result.feedback()


def test_exiting_early_with_status_0_scores_nothing() -> None:
    code = "import os, sys\ndef sum_multiples_of_3(nums):\n    sys.stdout.flush()\n    os._exit(0)\n"
    result = check_solution(SUM3, code)
    assert result.score == 0.0 and result.sandbox is not None and result.sandbox.returncode == 0
    at_load = check_solution(SUM3, "import sys\nsys.exit(0)\ndef sum_multiples_of_3(nums):\n    return 0\n")
    assert at_load.score == 0.0


def test_objects_whose_repr_and_eq_lie_score_nothing() -> None:
    answers = [repr(case.expected) for case in SUM3.tests]
    code = textwrap.dedent(
        f"""
        ANSWERS = {answers!r}
        class Liar(int):
            def __new__(cls, text):
                obj = super().__new__(cls, -12345)
                obj.text = text
                return obj
            def __repr__(self):
                return self.text
            __str__ = __repr__
            def __eq__(self, other):
                return True
            __hash__ = int.__hash__
        class Object:
            def __init__(self, text): self.text = text
            def __repr__(self): return self.text
            def __eq__(self, other): return True
        calls = [0]
        def sum_multiples_of_3(nums):
            calls[0] += 1
            text = ANSWERS[(calls[0] - 1) % len(ANSWERS)]
            return Liar(text) if calls[0] % 2 else Object(text)
        """
    )
    result = check_solution(SUM3, code)
    assert result.score == 0.0, result.feedback()


def test_a_tampering_unit_leaves_its_neighbours_scores_unchanged() -> None:
    """In one batch (one sandbox), a unit that attacks the harness, the pipes and the other processes does not
    change its group mates' scores."""
    tamper = textwrap.dedent(
        """
        import os, signal, sys
        for pid in range(1, 64):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if os.fork() == 0:
            import time
            time.sleep(0.3)
            for fd in (1, 2, 3):
                try:
                    os.write(fd, b"(0, 'error', 'forged', None)\\n(-1, 'load_error', 'forged', None)\\n")
                except OSError:
                    pass
            os._exit(0)
        def sum_multiples_of_3(nums):
            os.write(3, b"(-1, 'load_error', 'forged', None)\\n")
            return 0
        """
    )
    half = "def sum_multiples_of_3(nums):\n    return sum(x for x in nums if x % 3 == 0 and x > 0)\n"
    honest = [(SUM3, SUM3.reference), (SUM3, half)]
    alone = [r.score for r in check_solutions(honest)]
    mixed = check_solutions([honest[0], (SUM3, tamper), honest[1], (SUM3, tamper)])
    assert [mixed[0].score, mixed[2].score] == alone and alone[0] == 1.0 and 0 < alone[1] < 1
