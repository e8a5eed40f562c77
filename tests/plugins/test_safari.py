"""SAFARI: engine-identical prompts, the data filter, pairs on a hand-made tree, DPO by hand, an end-to-end smoke."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np
import pytest
import torch
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.core.api.backend import GenerationRequest
from arena.core.api.records import TrialSpec
from arena.core.api.seeding import derive_seed
from arena.core.backends.hf import HFBackend
from arena.core.backends.scripted import ScriptedBackend
from arena.core.config.trial import TrialConfig
from arena.core.host.plugins import PluginSet
from arena.core.rollout.engine import RolloutEngine
from arena.core.rollout.seats import BackendPool
from arena.plugins import safari
from arena.plugins.safari import (
    Choice,
    Cursor,
    DataOptions,
    Game,
    Label,
    PairOptions,
    Trajectory,
    build_pairs,
    expand_task,
    length_score,
    select_lines,
)
from tests.toy_model import build_model, build_tokenizer

# ----------------------------------------------------------------------------------------------------------------
# Prompts: exactly what the engine sends


def _engine_prompts(game: Game, seed: int, moves: list[str], seats: tuple[str, ...]) -> list[Any]:
    """Play one trial through the real engine, the scripted seat answering ``moves`` in order; its prompts."""
    prompts: list[Any] = []
    queue = list(moves)

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        prompts.append(request.messages)
        return f"<action>{queue.pop(0)}</action>"

    pool = BackendPool()
    pool.add("scripted", "scripted", ScriptedBackend(responder=responder))
    spec = TrialSpec(trial_id="t", arena_id=game.arena, seats=seats, seed=seed, arena_kwargs=game.arena_kwargs)
    RolloutEngine(PluginSet([]), TrialConfig(), backends=pool).run([spec])
    return prompts


@pytest.mark.parametrize(
    ("arena", "kwargs", "seat", "opponents", "expert"),
    [
        ("text_maze", {"size": "medium"}, 0, (), "text_maze-explorer"),
        ("tic_tac_toe", {}, 1, ("ttt-corners",), "mcts:50"),
    ],
)
def test_labels_carry_the_engines_prompts(
    arena: str, kwargs: dict[str, Any], seat: int, opponents: tuple[str, ...], expert: str
) -> None:
    game = Game(arena, kwargs, seat, opponents)
    line = expand_task(game, safari.make_policy(expert, game), 3, DataOptions(width=1, max_trajectories=1))[0]
    assert line.labels and line.deviations == 0
    seats = tuple("model:scripted@scripted" if s == safari.LEARNER_SEAT_SPEC else s for s in game.seats)
    engine = _engine_prompts(game, 3, [lb.move for lb in line.labels], seats)
    assert engine == [lb.messages for lb in line.labels]
    assert all(lb.answer == f"<action>{lb.move}</action>" for lb in line.labels)


# ----------------------------------------------------------------------------------------------------------------
# Stage 1: tree expansion and the performance filter


def test_tree_branches_from_copied_states_and_the_expert_solves_the_maze() -> None:
    game = Game("text_maze", {"size": "small"})
    options = DataOptions(width=3, depth=2, max_deviations=1, max_trajectories=5)
    lines = expand_task(game, safari.make_policy("text_maze-explorer", game), 0, options)
    assert len(lines) == 5
    main = lines[0]
    assert main.success and main.deviations == 0 and main.ret == 1.0
    for line in lines[1:]:
        assert line.deviations == 1
        (where,) = [i for i, lb in enumerate(line.labels) if lb.deviation]
        assert where < options.depth
        # The branch shares the main line's prefix (the copied state) and differs at the deviation.
        assert [lb.move for lb in line.labels[:where]] == [lb.move for lb in main.labels[:where]]
        assert line.labels[where].move != main.labels[where].move


def _line(index: int, ret: float, length: int, deviations: int = 0, success: bool = True) -> Trajectory:
    labels = tuple(Label((), 0, "m", "<action>m</action>", i < deviations) for i in range(length))
    return Trajectory(0, index, labels, ret, success, deviations, step_limit=20)


def test_filter_keeps_the_best_scored_successes() -> None:
    lines = [
        _line(0, 1.0, 10),
        _line(1, 1.0, 12, deviations=1),
        _line(2, 1.0, 8, deviations=2),
        _line(3, 0.0, 4, success=False),
        _line(4, 1.0, 10, deviations=1),
    ]
    kept = select_lines(lines, DataOptions(length_penalty=0.5, keep_fraction=0.5))
    # scores: 1 − 0.5·len/20 → 0.75, 0.70, 0.80, (failure), 0.75; the tie 0/4 goes to more deviations (4).
    assert [t.index for t, _ in kept] == [2, 4]
    assert kept[0][1] == pytest.approx(length_score(1.0, 8, 20, 0.5)) == pytest.approx(0.8)
    assert [t.index for t, _ in select_lines(lines, DataOptions(min_deviations=2))] == [2]
    assert select_lines(lines, DataOptions(min_score=0.9)) == []


# ----------------------------------------------------------------------------------------------------------------
# Stage 3: pairs on a hand-made tree

#: Terminal reward after actions (a0, a1) of a two-step, three-action tree.
REWARD = [[0.2, 1.0, 0.0], [0.5, 0.5, 0.5], [0.1, 0.9, 0.9]]


class TreeEnv(AECEnv[str, dict[str, np.ndarray], int | None]):
    """One agent, two decisions of three actions, reward ``REWARD[a0][a1]`` at the end; state = the path."""

    metadata: ClassVar[dict[str, Any]] = {"name": "tree_v0", "is_parallelizable": False}

    def __init__(self) -> None:
        super().__init__()
        self.possible_agents = ["player_0"]
        self.path: list[int] = []

    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return spaces.Dict({"observation": spaces.MultiDiscrete([4, 4]), "action_mask": spaces.MultiBinary(3)})

    def action_space(self, agent: str) -> spaces.Discrete:
        return spaces.Discrete(3)

    def _tables(self, reward: float, done: bool) -> None:
        self.rewards = {"player_0": reward}
        self._cumulative_rewards = {"player_0": reward}
        self.terminations = {"player_0": done}
        self.truncations = {"player_0": False}
        self.infos = {"player_0": {}}

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        self.path = []
        self.agents = ["player_0"]
        self.agent_selection = "player_0"
        self._tables(0.0, False)

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        padded = [*(a + 1 for a in self.path), 0, 0][:2]
        return {"observation": np.array(padded), "action_mask": np.ones(3, dtype=np.int8)}

    def step(self, action: int | None) -> None:
        if self.terminations["player_0"]:
            self._was_dead_step(action)
            return
        assert action is not None
        self.path.append(int(action))
        done = len(self.path) == 2
        self._tables(REWARD[self.path[0]][self.path[1]] if done else 0.0, done)

    def get_state(self) -> dict[str, Any]:
        return copy.deepcopy(
            {
                k: getattr(self, k)
                for k in (
                    "path",
                    "agents",
                    "agent_selection",
                    "rewards",
                    "_cumulative_rewards",
                    "terminations",
                    "truncations",
                    "infos",
                )
            }
        )

    def set_state(self, state: dict[str, Any]) -> None:
        for key, value in copy.deepcopy(state).items():
            setattr(self, key, value)


class TablePolicy:
    """Plays ``table[tuple(path)]``; answers like a model would (its own text)."""

    def __init__(self, name: str, table: dict[tuple[int, ...], int]) -> None:
        self.name = name
        self.table = table
        self.calls = 0

    def choose(self, game: Game, cursors: Sequence[Cursor], seeds: Sequence[int]) -> list[Choice]:
        self.calls += len(cursors)
        actions = [self.table[tuple(c.env.path)] for c in cursors]
        return [Choice(a, f"I pick {a}. <action>{a}</action>") for a in actions]


def _tree_pairs(margin: float) -> list[dict[str, Any]]:
    game = Game("tree", make_env=TreeEnv)
    expert = TablePolicy("expert", {(): 0, (0,): 1})
    student = TablePolicy("student", {(): 1, (0,): 2})
    forward = TablePolicy("forward", {(a,): 0 for a in range(3)})  # always action 0 after the first decision
    options = PairOptions(rollouts=3, value="return", margin=margin, states_per_task=10)
    pairs, stats = build_pairs(game, expert, student, forward, [0], options, progress=False)
    assert stats["states"] == 2 and stats["valued"] == 2 and stats["agreement_rate"] == 0.0
    assert forward.calls == 3 * 2  # root: two actions × 3 rollouts each need one more decision; s1: none
    return pairs


def test_pairs_on_a_hand_made_tree() -> None:
    # Root: expert 0 is worth REWARD[0][0] = 0.2, the student's 1 is worth REWARD[1][0] = 0.5 → the student wins.
    # After 0: expert 1 is worth 1.0, the student's 2 is worth 0.0 → the expert wins.
    pairs = _tree_pairs(margin=0.05)
    assert [(p["decision"], p["chosen_by"]) for p in pairs] == [(0, "student"), (1, "expert")]
    root, second = pairs
    assert root["values"] == {"expert": pytest.approx(0.2), "student": pytest.approx(0.5)}
    assert root["chosen"] == "I pick 1. <action>1</action>" and root["rejected"].startswith("<action>")
    assert second["values"] == {"expert": pytest.approx(1.0), "student": pytest.approx(0.0)}
    assert second["rejected"] == "I pick 2. <action>2</action>"
    assert [p["decision"] for p in _tree_pairs(margin=0.5)] == [1]
    assert _tree_pairs(margin=1.0) == []  # a gap must exceed the margin


def test_invalid_student_answer_is_worth_the_forfeit_value() -> None:
    class Mute(TablePolicy):
        def choose(self, game: Game, cursors: Sequence[Cursor], seeds: Sequence[int]) -> list[Choice]:
            return [Choice(None, "no idea") for _ in cursors]

    game = Game("tree", make_env=TreeEnv)
    expert = TablePolicy("expert", {(): 0, (0,): 1})
    forward = TablePolicy("forward", {(a,): 0 for a in range(3)})
    options = PairOptions(rollouts=1, value="return", margin=0.01, invalid_value=-1.5, rejected="any")
    pairs, stats = build_pairs(game, expert, Mute("s", {}), forward, [0], options, progress=False)
    assert stats["student_valid_rate"] == 0.0
    assert [p["values"]["student"] for p in pairs] == [-1.5, -1.5]
    assert all(p["rejected"] == "no idea" and p["chosen_by"] == "expert" for p in pairs)
    assert stats["illegal_rejected"] == 2 and stats["legal_pairs"] == 0
    # By default (rejected: legal) such a state makes no pair: it is counted, not paired.
    pairs, stats = build_pairs(game, expert, Mute("s", {}), forward, [0], attrs.evolve(options, rejected="legal"))
    assert pairs == [] and stats["no_legal_answer"] == 2 and stats["valued"] == 0
    assert stats["student_answers"] == stats["illegal_answers"] == 2 * options.student_samples


#: Hand-made student answers by (task, decision, sample): illegal ones (no move, a move that does not exist) and
#: legal ones of different values. Unlisted samples answer ``NO_MOVE``.
STUDENT_ANSWERS = {
    (0, 0, 0): "no idea",
    (0, 0, 1): "<action>7</action>",
    (0, 0, 2): "I pick 2. <action>2</action>",  # worth REWARD[2][0] = 0.1 < the expert's 0 (0.2)
    (0, 1, 0): "garbled",  # then only NO_MOVE: no legal answer at this state
    (1, 0, 0): "I pick 1. <action>1</action>",  # worth 0.5 > the expert's 0 (0.2): the student's answer is chosen
    (1, 1, 0): "I pick 2. <action>2</action>",  # worth 0.0 < the expert's 1 (1.0)
}
NO_MOVE = "pass"
ILLEGAL = {"no idea", "<action>7</action>", "garbled", NO_MOVE}


def _scripted_student() -> safari.ModelPolicy:
    """The real model policy (prompt, parse, legality) over a scripted backend answering ``STUDENT_ANSWERS``."""
    by_seed = {
        derive_seed(task, "student", decision, *([k] if k else [])): text
        for (task, decision, k), text in STUDENT_ANSWERS.items()
    }
    for task, decision in ((0, 0), (0, 1), (1, 0), (1, 1)):
        for k in range(8):
            by_seed.setdefault(derive_seed(task, "student", decision, *([k] if k else [])), NO_MOVE)

    def responder(request: GenerationRequest, rng: np.random.Generator) -> str:
        return by_seed[request.seed]

    return safari.ModelPolicy("model:student", backend=ScriptedBackend(responder=responder))


def _student_pairs(**options: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    game = Game("tree", make_env=TreeEnv)
    expert = TablePolicy("expert", {(): 0, (0,): 1})
    forward = TablePolicy("forward", {(a,): 0 for a in range(3)})
    pair_options = PairOptions(rollouts=1, value="return", margin=0.01, **options)
    return build_pairs(game, expert, _scripted_student(), forward, [0, 1], pair_options, progress=False)


def test_pairs_reject_only_legal_student_answers_by_default() -> None:
    pairs, stats = _student_pairs()
    assert not ILLEGAL & {p["rejected"] for p in pairs}, "an illegal answer is the rejected side of a pair"
    assert all(p["values"]["student"] != -1.5 for p in pairs)
    # Task 0, decision 0: the first two answers name no legal move, the third (move 2, worth less) is rejected.
    # Task 0, decision 1: no legal answer in 4 samples: no pair. Task 1: legal first answers, as before.
    assert [(p["task_seed"], p["decision"], p["chosen"], p["rejected"]) for p in pairs] == [
        (0, 0, "<action>0</action>", "I pick 2. <action>2</action>"),
        (1, 0, "I pick 1. <action>1</action>", "<action>0</action>"),
        (1, 1, "<action>1</action>", "I pick 2. <action>2</action>"),
    ]
    assert [p["student_sample"] for p in pairs] == [2, 0, 0]
    chosen_value = [max(p["values"].values()) for p in pairs]
    rejected_value = [min(p["values"].values()) for p in pairs]
    assert all(c > r for c, r in zip(chosen_value, rejected_value, strict=True))
    assert stats["rejected"] == "legal"
    assert (stats["states"], stats["kept"], stats["legal_pairs"], stats["illegal_rejected"]) == (4, 3, 3, 0)
    assert stats["no_legal_answer"] == 1  # the shortfall is reported, not filled with an illegal answer
    assert (stats["student_answers"], stats["illegal_answers"]) == (4 + 4 + 1 + 1, 3 + 4)
    assert stats["student_valid"] == 2  # the first answer, as before
    text = safari.format_summary({"pairs": {**stats, "options": {"student_samples": 4}, "seconds": 0.0}})
    assert "3 legal vs legal, 0 with an illegal rejected answer" in text
    assert "1 of 4 states without a legal student answer in 4 sample(s), no pair there" in text


def test_rejected_any_keeps_the_old_pairs() -> None:
    pairs, stats = _student_pairs(rejected="any")
    # One answer per state, an illegal one worth the forfeit value and rejected against the expert's move.
    assert [(p["task_seed"], p["decision"], p["chosen"], p["rejected"]) for p in pairs] == [
        (0, 0, "<action>0</action>", "no idea"),
        (0, 1, "<action>1</action>", "garbled"),
        (1, 0, "I pick 1. <action>1</action>", "<action>0</action>"),
        (1, 1, "<action>1</action>", "I pick 2. <action>2</action>"),
    ]
    assert [p["values"]["student"] for p in pairs[:2]] == [-1.5, -1.5]
    assert (stats["kept"], stats["legal_pairs"], stats["illegal_rejected"]) == (4, 2, 2)
    assert (stats["student_answers"], stats["illegal_answers"], stats["no_legal_answer"]) == (4, 2, 2)
    _, legal_one = _student_pairs(rejected="legal", student_samples=1)  # no resampling: both states unpaired
    assert (legal_one["kept"], legal_one["no_legal_answer"], legal_one["student_answers"]) == (2, 2, 4)


def test_pair_settings_table_matches_pair_options() -> None:
    from tests.plugins.test_settings_tables import ROW, table_value

    rows = dict(ROW.findall(safari.__doc__ or ""))
    fields = {f.name: f.default for f in attrs.fields(PairOptions)}
    assert set(rows) == set(fields)
    assert {k: table_value(v) for k, v in rows.items()} == fields


# ----------------------------------------------------------------------------------------------------------------
# Stage 4: the DPO loss by hand (β 0.1) through the trainer path of ``arena safari dpo``


def _sequence_logp(model: Any, context: Sequence[int], completion: Sequence[int]) -> float:
    ids = torch.tensor([[*context, *completion]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    logp = torch.log_softmax(logits[len(context) - 1 : -1], dim=-1)
    return float(logp.gather(-1, torch.tensor(completion)[:, None]).sum())


def test_dpo_loss_matches_hand_computation() -> None:
    from arena.core.learn.sft import make_trainer

    tokenizer = build_tokenizer()
    model = build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
    backend = HFBackend(model, tokenizer=tokenizer)
    rows = [
        {
            "messages": [{"role": "user", "content": "poker: call or fold?"}],
            "chosen": "<action>call</action>",
            "rejected": "<action>fold</action>",
        },
        {
            "messages": [{"role": "user", "content": "tic tac toe: legal moves: 0: left 1: right"}],
            "chosen": "<action>right</action>",
            "rejected": "I think <action>left</action>",
        },
    ]
    units = safari.pair_units(backend, rows, sft_coef=0.0)
    assert [[s.loss for s in u] for u in units] == [["dpo_chosen", "dpo_rejected"]] * 2
    assert [u[0].meta["pair"] for u in units] == [0, 1] and units[0][1].meta["pair"] == 0
    trainer = make_trainer(backend, 1e-3, 8192, 1.0, dpo_beta=0.1, sft_coef=0.0)
    reference = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in reference.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    trainer.reference = reference
    expected = []
    for chosen, rejected in units:
        pc, pr = (_sequence_logp(model, s.context_ids, s.completion_ids) for s in (chosen, rejected))
        rc, rr = (_sequence_logp(reference, s.context_ids, s.completion_ids) for s in (chosen, rejected))
        margin = 0.1 * ((pc - rc) - (pr - rr))
        expected.append((-np.log(1.0 / (1.0 + np.exp(-margin))), margin))
    metrics = trainer.update([s for u in units for s in u])
    assert metrics["train/loss"] == pytest.approx(np.mean([e[0] for e in expected]), abs=1e-4)
    assert metrics["train/dpo_reward_margin"] == pytest.approx(np.mean([e[1] for e in expected]), abs=1e-4)
    assert abs(np.mean([e[1] for e in expected])) > 1e-3  # the reference really differs: not the log 2 of a tie


def test_dpo_units_add_sft_samples_of_the_chosen_answer() -> None:
    tokenizer = build_tokenizer()
    backend = HFBackend(build_model(len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id), tokenizer)
    rows = [{"messages": [{"role": "user", "content": "x"}], "chosen": "<action>a</action>", "rejected": "b"}]
    (unit,) = safari.pair_units(backend, rows, sft_coef=1.0)
    assert [s.loss for s in unit] == ["dpo_chosen", "dpo_rejected", "sft"]
    assert unit[2].completion_ids == unit[0].completion_ids
    assert unit[0].completion_ids[-1] == tokenizer.eos_token_id


# ----------------------------------------------------------------------------------------------------------------
# End to end


@pytest.mark.slow
def test_pipeline_smoke(tmp_path: Path, model_cache: None) -> None:
    """data → sft → pairs → dpo on text_maze with model:tiny and tiny budgets; every stage writes its summary."""
    from arena.core.config.loader import load_config

    config = load_config(
        safari.SafariConfig,
        data={
            "arena": "text_maze",
            "expert": "text_maze-explorer",
            "tasks": 1,
            "pair_tasks": 1,
            "sft_epochs": 1,
            "data": {"max_trajectories": 3},
            "pairs": {"states_per_task": 3, "rollouts": 1, "margin": 0.0},
            "dpo": {"epochs": 1},
        },
    )
    summary = safari.run_pipeline(config, tmp_path, progress=False)
    assert summary["data"]["examples"] > 0 and summary["data"]["expert_pass_rate"] == 1.0
    assert summary["sft"]["steps"] >= 1
    assert summary["pairs"]["states"] == 3
    assert summary["dpo"]["pairs"] == summary["pairs"]["kept"]
    for stage, name in (
        ("data", "data_summary"),
        ("sft", "sft_summary"),
        ("pairs", "pairs_summary"),
        ("dpo", "dpo_summary"),
    ):
        assert json.loads((tmp_path / stage / f"{name}.json").read_text())["stage"] == stage
    assert (tmp_path / "dpo" / "model.safetensors").exists()
    rows = [json.loads(x) for x in (tmp_path / "data" / "sft.jsonl").read_text().splitlines()]
    assert all(r["answer"].startswith("<action>") for r in rows)
