"""The base class of the single-task text envs (``arena.arenas.single_task.SingleTaskTextEnv``), on a toy subclass.

The coding and instruct arenas' own tests cover those envs; these pin what the base class does by itself: the empty
task list, the spaces, how ``reset`` picks a task, how ``step`` turns an action into text and bookkeeps rewards.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Mapping
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
from gymnasium import spaces
from pettingzoo.test import api_test

from arena.arenas.single_task import SingleTaskTextEnv


@attrs.frozen
class _Task:
    task_id: str
    tier: int
    word: str


pytestmark = pytest.mark.filterwarnings("ignore:Action space for each agent probably should be:UserWarning")


TASKS = (_Task("a", 1, "apple"), _Task("b", 2, "banana"), _Task("c", 2, "cherry"))


class _GuessEnv(SingleTaskTextEnv[_Task]):
    """Guess the task's word in up to ``tries`` answers; reward 1 for the right word, given when the episode ends."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "guess_v0", "is_parallelizable": False}

    def __init__(self, tasks: tuple[_Task, ...] = TASKS, tries: int = 2) -> None:
        self.tries = tries
        self.answers: list[str] = []
        super().__init__(tasks, counter_high=tries, max_text=40, adapter="toy adapter", no_tasks="no words to guess")

    def _counter(self) -> int:
        return self.tries - len(self.answers)

    def _task_list_name(self) -> str:
        return "the toy list"

    def _start_task(self) -> None:
        self.answers = []

    def _answer(self, text: str) -> tuple[float, bool, dict[str, Any]]:
        self.answers.append(text)
        right = text == self.task.word
        done = right or len(self.answers) >= self.tries
        return (1.0 if right and done else 0.0), done, {"answer": text}

    def arena_outcome(self, returns: Mapping[str, float], agent: str) -> str:
        return "win" if self.answers and self.answers[-1] == self.task.word else "loss"


def test_an_empty_task_list_is_an_error_with_the_subclass_message() -> None:
    with pytest.raises(ValueError, match=r"^no words to guess$"):
        _GuessEnv(tasks=())


def test_a_subclass_must_implement_the_hooks() -> None:
    class Half(SingleTaskTextEnv[_Task]):
        def _counter(self) -> int:
            return 0

    with pytest.raises(TypeError, match="abstract"):
        Half(TASKS, counter_high=1, max_text=10, adapter=None, no_tasks="none")


def test_spaces_and_initial_bookkeeping() -> None:
    env = _GuessEnv(tries=3)
    box, text = env.observation_space("player_0"), env.action_space("player_0")
    assert isinstance(box, spaces.Box) and box.dtype == np.int64 and box.shape == (2,)
    assert box.low.tolist() == [0, 0] and box.high.tolist() == [len(TASKS) - 1, 3]
    assert isinstance(text, spaces.Text) and text.max_length == 40 and text.min_length == 0
    assert env.possible_agents == ["player_0"] and env.agents == [] and env.render_mode is None
    assert env.agent_selection == "player_0" and env.arena_text_adapter == "toy adapter"
    assert env.task is TASKS[0] and env.rewards == {} and env.infos == {}
    assert env.render() is None and env.close() is None


def test_reset_picks_by_id_then_seed_then_a_fixed_rng() -> None:
    env = _GuessEnv()
    env.reset(seed=4)
    assert env.task is TASKS[1] and env.observe("player_0").tolist() == [1, 2]
    assert env.infos == {"player_0": {"task_id": "b", "tier": 2}} and env.agents == ["player_0"]
    env.reset(seed=4, options={"task_id": "c"})
    assert env.task_index == 2
    with pytest.raises(ValueError, match="task 'z' is not in the toy list"):
        env.reset(options={"task_id": "z"})
    drawn = []
    for fresh in (_GuessEnv(), _GuessEnv()):
        fresh.reset()
        fresh.reset()
        drawn.append(fresh.task_index)
    assert drawn[0] == drawn[1]


def test_step_turns_the_action_into_text_and_pays_only_the_last_step() -> None:
    env = _GuessEnv()
    env.reset(seed=0)
    env.step(None)
    assert env.answers == [""] and env.rewards == {"player_0": 0.0} and not env.terminations["player_0"]
    assert env.observe("player_0").tolist() == [0, 1]
    env.step("apple")
    assert env.answers == ["", "apple"] and env.terminations == {"player_0": True}
    assert env.last()[1:] == (1.0, True, False, {"answer": "apple"})
    assert env.arena_outcome({}, "player_0") == "win"
    env.step(None)  # PettingZoo's dead step: the agent leaves, the answer list is untouched
    assert env.agents == [] and env.answers == ["", "apple"]
    env.reset(seed=1)
    env.step(7)
    assert env.answers == ["7"] and env._cumulative_rewards == {"player_0": 0.0}


def test_passes_the_pettingzoo_api_test_and_copies() -> None:
    api_test(_GuessEnv(), num_cycles=5)
    env = _GuessEnv()
    env.reset(seed=2)
    env.step("wrong")
    for clone in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert clone.task == env.task and clone.answers == ["wrong"]
        assert clone.observe("player_0").tolist() == env.observe("player_0").tolist()
        clone.step("cherry")
        assert clone.rewards == {"player_0": 1.0} and env.answers == ["wrong"]
