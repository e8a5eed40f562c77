"""HumanEval as a suite of the coding arena: the loader, HumanEval's own check() in the real sandbox, the env's
kwargs and a trial through the rollout engine."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from arena.arenas.coding import CodingEnv, check_solution, check_solutions
from arena.arenas.humaneval import HumanEvalTask, humaneval_tasks
from arena.core.api.arena import SeatView
from arena.core.api.backend import GenerationRequest
from arena.core.cli.main import cli
from arena.core.config.trial import PromptConfig, TrialConfig

from ..core.helpers import play, specs

pytestmark = pytest.mark.filterwarnings("ignore:Action space for each agent probably should be:UserWarning")

TASKS = humaneval_tasks()
BY_ID = {t.task_id: t for t in TASKS}
HE0 = BY_ID["HumanEval/0"]


def view(env: Any) -> SeatView:
    return SeatView(env, "player_0", 0, env.observe("player_0"), None, dict(env.infos.get("player_0", {})))


def test_the_loader_gives_164_problems_with_ids_and_entry_points() -> None:
    assert len(TASKS) == 164
    assert [t.task_id for t in TASKS] == [f"HumanEval/{i}" for i in range(164)]
    assert all(isinstance(t, HumanEvalTask) and t.family == "humaneval" and t.split == "test" for t in TASKS)
    assert all(t.name.isidentifier() and f"def {t.name}(" in t.context for t in TASKS)
    assert all("def check(candidate)" in t.check and t.reference.startswith(t.context) for t in TASKS)
    assert all(t.tests == () and t.examples == () for t in TASKS)
    assert HE0.name == "has_close_elements"
    assert HE0.signature == "def has_close_elements(numbers: List[float], threshold: float) -> bool"
    prompt = HE0.prompt()
    assert "`has_close_elements`" in prompt and HE0.context.strip() in prompt
    assert "assert" not in prompt and "canonical" not in prompt  # the check and the solution stay hidden
    assert humaneval_tasks() is TASKS  # loaded once


def test_canonical_solution_scores_one_in_the_sandbox_and_a_wrong_one_zero() -> None:
    good = check_solution(HE0, HE0.reference)
    assert good.all_passed and good.score == 1.0 and good.sandbox is not None
    assert good.sandbox.isolation.startswith("bwrap") and good.feedback() == "All 1 hidden test passed."
    wrong = "def has_close_elements(numbers, threshold):\n    return False\n"
    bad = check_solution(HE0, wrong)
    assert bad.score == 0.0 and not bad.all_passed and bad.load_error is None
    text = bad.feedback()
    assert "AssertionError" in text and 'File "check.py"' in text
    # The canonical body alone is a completion of the prompt, HumanEval's own format.
    assert check_solution(HE0, HE0.reference[len(HE0.context) :]).all_passed


@pytest.mark.parametrize(
    ("code", "needle"),
    [
        ("def has_close_elements(:\n", "SyntaxError"),
        ("def something_else(x):\n    return True\n", "no function named has_close_elements"),
        ("import time\ndef has_close_elements(n, t):\n    time.sleep(30)\n", "timed out"),
    ],
)
def test_unusable_code_scores_zero_with_feedback(code: str, needle: str) -> None:
    result = check_solution(HE0, code, timeout_s=2.0)
    assert result.score == 0.0 and needle in result.feedback()


def test_cheats_score_nothing() -> None:
    """A forged verdict on fd 3 (no token) and an object that equals everything both score 0."""
    forged = (
        "import os\n"
        "os.write(3, repr((0, 'passed', '')).encode() + b'\\n')\n"
        "os.write(3, b\"(0, 'passed')\\n\")\n"
        "os._exit(0)\n"
        "def has_close_elements(n, t):\n    return True\n"
    )
    assert check_solution(HE0, forged).score == 0.0
    liar = (
        "class Yes:\n    def __eq__(self, other):\n        return True\n\n"
        "def has_close_elements(n, t):\n    return Yes()\n"
    )
    result = check_solution(HE0, liar)
    assert result.score == 0.0 and "returned a Yes object" in result.feedback()


def _canonical_pass_and_stubs_fail(sample: list[HumanEvalTask]) -> None:
    stubs = [(t, f"def {t.name}(*args):\n    return None\n") for t in sample]
    results = check_solutions([(t, t.reference) for t in sample] + stubs)
    for task, result in zip(sample, results[: len(sample)], strict=True):
        assert result.all_passed, f"{task.task_id}: {result.feedback()}"
    for task, result in zip(sample, results[len(sample) :], strict=True):
        assert not result.all_passed, f"{task.task_id}: returning None passes"


def test_a_sample_of_canonical_solutions_pass_and_stubs_fail() -> None:
    """20 problems drawn at random (seeded), in one sandbox: every canonical solution passes, a function returning
    None fails."""
    _canonical_pass_and_stubs_fail(random.Random(0).sample(TASKS, 20))


@pytest.mark.slow
def test_every_canonical_solution_passes_and_stubs_fail() -> None:
    """All 164 (about 10 s for the 328 runs on 2 cores)."""
    _canonical_pass_and_stubs_fail(list(TASKS))


# ------------------------------------------------------------------------------------------------- the env


def test_the_env_plays_humaneval_by_seed_or_id() -> None:
    env = CodingEnv(suite="humaneval")
    assert env.tasks == list(TASKS) and env.split == "all"
    env.reset(seed=164 + 32)
    assert env.task.task_id == "HumanEval/32"
    env.reset(options={"task_id": "HumanEval/0"})
    adapter = env.arena_text_adapter
    assert "HumanEval's check" in adapter.rules(view(env)) and "1 if all" in adapter.rules(view(env))
    assert adapter.observation(view(env)) == HE0.prompt()
    env.step(HE0.reference)
    assert env.rewards["player_0"] == 1.0 and env.arena_outcome({"player_0": 1.0}, "player_0") == "win"
    details = adapter.episode_details(view(env))
    assert details["task_id"] == "HumanEval/0" and details["total"] == 1 and details["passed"] == [0]
    assert details["rubrics"] == [{"description": "HumanEval's check(has_close_elements) passes", "satisfied": True}]
    with pytest.raises(ValueError, match="not in the humaneval suite"):
        env.reset(options={"task_id": "sum_multiples.k3"})
    assert CodingEnv().tasks[0].family != "humaneval"  # the generated tasks stay the default


def test_wrong_suite_or_kwargs_are_clear_errors() -> None:
    with pytest.raises(ValueError, match=r"unknown coding suite 'mbpp'.*'generated', 'humaneval'"):
        CodingEnv(suite="mbpp")
    with pytest.raises(ValueError, match="no train split and no tiers"):
        CodingEnv(suite="humaneval", split="train")
    with pytest.raises(ValueError, match="no train split and no tiers"):
        CodingEnv(suite="humaneval", tiers=[1])
    assert len(CodingEnv(suite="humaneval", split="test").tasks) == 164


def _canonical_responder(request: GenerationRequest, rng: np.random.Generator) -> str:
    prompt = request.messages[-1].content
    task = next((t for t in TASKS if t.context.strip() in prompt), None)
    if request.purpose != "action" or task is None:
        return "<remark>nothing to add</remark>"
    body = task.reference[len(task.context) :]
    return f"Here it is.\n```python\n{task.signature}:\n{body}```\n"


def test_trials_through_the_rollout_engine() -> None:
    trial_specs = specs(2, arena="coding", seats=("model:scripted",), arena_kwargs={"suite": "humaneval"})
    config = TrialConfig(prompt=PromptConfig(max_new_tokens=1024))  # the scripted backend's tokens are bytes
    trials, _, _ = play(trial_specs, config=config, responder=_canonical_responder)
    for trial in trials:
        task = TASKS[trial.spec.seed % 164]
        assert trial.final.returns["player_0"] == 1.0 and trial.final.outcomes["player_0"] == "win"
        assert trial.final.details["player_0"]["task_id"] == task.task_id


def test_arena_passk_takes_the_suite_as_an_arena_kwarg() -> None:
    args = ["passk", "model:scripted", "--arena", "coding", "--arena-kwarg", "suite=humaneval", "--tasks", "2"]
    result = CliRunner().invoke(cli, [*args, "--samples", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # the logs go to stderr
    assert report["arena_kwargs"] == {"suite": "humaneval"} and report["tasks"] == 2
    assert [row["task_id"] for row in report["per_task"]] == ["HumanEval/0", "HumanEval/1"]
    bad = CliRunner().invoke(cli, ["passk", "model:scripted", "--arena", "coding", "--arena-kwarg", "suite"])
    assert bad.exit_code != 0 and "--arena-kwarg takes KEY=VALUE" in bad.output
