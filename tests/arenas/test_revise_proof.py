"""The HeRL proof script's counts (tests/arenas/revise_proof.py) on a hand-made rollout dump.

With ``train_context: original`` an injected revision is trained in the instruction's own prompt, so only the
prompt it was sampled in (``rollout_context_text``) shows that it is a revision; the script once read the training
context and counted every such revision as a copy of a draft.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.arenas.revise_proof import (
    REVISION,
    finished,
    held_out,
    injected_passes,
    instruction_prompt,
    passk_success,
    revision_rates,
    rollout_rates,
)

TASK = "Write a note about rain.\nConstraints:\n- Write everything in capital letters."


def sample(
    group: str, env: float, advantage: float, injected: bool = False, rollout: str | None = None
) -> dict[str, Any]:
    prompt = instruction_prompt(TASK)
    return {
        "kind": "action",
        "group_id": group,
        "reward_terms": {"env": env},
        "advantage": advantage,
        "context_text": prompt,
        "rollout_context_text": rollout or prompt,
        "completion_text": "IT RAINS." if env else "it rains.",
        "anchor": TASK + "\x1fNone",
        **({"injected": "herl"} if injected else {}),
    }


def write_run(root: Path, samples: list[dict[str, Any]], evals: list[float]) -> Path:
    (root / "rollouts").mkdir(parents=True)
    (root / "rollouts" / "iter_00000.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    lines = [{"iteration": i, "eval/mean_return": v} for i, v in enumerate(evals)]
    (root / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return root


def test_revisions_trained_in_the_original_prompt_count_as_revisions(tmp_path: Path) -> None:
    revision_prompt = f"{REVISION}\n\nInstruction:\n{TASK}"
    samples = [
        sample("g0", 0.0, -0.35),
        sample("g0", 1.0, 2.47, injected=True, rollout=revision_prompt),  # a passing revision, original context
        sample("g1", 0.0, 0.0),
        sample("g1", 0.0, 0.0, injected=True),  # a copy of a draft (sampled in the instruction's prompt)
        sample("g2", 1.0, 2.47),  # the policy's own pass
        sample("g2", 0.0, -0.35),
    ]
    run = write_run(tmp_path / "herl_original_s0", samples, [0.1, 0.2])
    rates = rollout_rates(run)
    assert rates["injected revisions (met) / fallbacks"] == "1 (1) / 1"
    assert rates["own answers met"] == 1 / 4
    assert rates["groups with a signal"] == 2 / 3
    assert rates["groups holding an answer that met every constraint"] == 2 / 3
    assert injected_passes(run) == [(instruction_prompt(TASK), "IT RAINS.")]


def test_a_run_counts_once_it_has_evaluated_before_and_after(tmp_path: Path) -> None:
    assert finished(write_run(tmp_path / "done", [sample("g0", 0.0, 0.0)], [0.1, 0.2]))
    assert not finished(write_run(tmp_path / "running", [sample("g0", 0.0, 0.0)], [0.1]))


def test_golf_injections_and_refinements_are_not_the_policys_own_answers(tmp_path: Path) -> None:
    """GOLF's refiner group (``kind: refinement``) and its injected refinement are counted apart from the answers the
    policy wrote to the instruction; counting the injection as the policy's own would credit GOLF with a pass it
    was handed."""
    refinement = {**sample("g0/golf-e0", 1.0, 0.5), "kind": "refinement"}
    samples = [
        sample("g0", 0.0, -0.125),
        {**sample("g0", 1.0, 0.875), "injected": "golf"},
        refinement,
        {**refinement, "reward_terms": {"env": 0.0}, "advantage": -0.5},
        sample("g1", 0.0, 0.0),
        sample("g1", 0.0, 0.0),
    ]
    rates = rollout_rates(write_run(tmp_path / "golf_s0", samples, [0.0, 0.1]))
    assert rates["own answers met"] == 0.0
    assert rates["groups with a signal"] == 1 / 2
    assert rates["refinements met"] == 1 / 2
    assert rates["GOLF injections (of groups)"] == "1 (2)"
    assert rates["injected revisions (met) / fallbacks"] == "0 (0) / 0"


def test_passk_success_weighs_every_task_alike_and_splits_by_kind(tmp_path: Path) -> None:
    tasks = [
        {"task_id": "uppercase.001", "samples": 4, "successes": 4},
        {"task_id": "uppercase.002", "samples": 4, "successes": 0},
        {"task_id": "end_with.001", "samples": 4, "successes": 1},
    ]
    report = tmp_path / "golf_s0.json"
    report.write_text(json.dumps({"per_task": tasks, "success_rate": 5 / 12}))
    rates = passk_success(report)
    assert rates["held-out success, passk"] == (1 + 0 + 0.25) / 3
    assert rates["held-out success, passk, uppercase"] == 0.5
    assert rates["held-out success, passk, end_with"] == 0.25


def test_a_half_met_answer_scores_but_is_not_a_pass(tmp_path: Path) -> None:
    """On two-constraint tasks a score of 0.5 (one of two met) gives GRPO a signal without a pass in the group."""
    samples = [sample("g0", 0.5, 0.7), sample("g0", 0.0, -0.7), sample("g1", 1.0, 0.7), sample("g1", 0.5, -0.7)]
    rates = rollout_rates(write_run(tmp_path / "grpo_s0", samples, [0.1, 0.2]))
    assert rates["own answers met"] == 1 / 4
    assert rates["own answers' mean score"] == 2 / 4
    assert rates["groups with a signal"] == 1.0
    assert rates["groups holding an answer that met every constraint"] == 1 / 2


def test_held_out_success_counts_answers_that_met_every_constraint(tmp_path: Path) -> None:
    """On two-constraint tasks ``eval/mean_return`` is the mean fraction met; success is ``eval/win_rate``. Runs
    from before the win rate was read (one constraint) give the same number either way."""
    run = write_run(tmp_path / "grpo_s0", [sample("g0", 0.0, 0.0)], [0.4, 0.5])
    assert held_out(run) == (0.4, 0.5)
    lines = [{"eval/mean_return": 0.37, "eval/win_rate": 0.0}, {"eval/mean_return": 0.52, "eval/win_rate": 0.08}]
    (run / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert held_out(run) == (0.0, 0.08)
    assert held_out(run, "eval/mean_return") == (0.37, 0.52)


def test_herl_revision_rates_sum_the_iterations_metrics(tmp_path: Path) -> None:
    run = write_run(tmp_path / "herl_original_s0", [sample("g0", 0.0, 0.0)], [0.0, 0.1])
    lines = [
        {"iteration": 0, "augment/herl/candidates": 6.0, "augment/herl/revisions_improved": 3.0},
        {
            "iteration": 1,
            "augment/herl/candidates": 4.0,
            "augment/herl/revisions_improved": 1.0,
            "augment/herl/revision_reward_sum": 3.5,
        },
    ]
    with (run / "metrics.jsonl").open("a") as out:
        out.write("".join(json.dumps(line) + "\n" for line in lines))
    assert revision_rates(run) == {"HeRL revisions that beat their draft": 0.4, "HeRL revisions' mean score": 0.35}
    assert revision_rates(write_run(tmp_path / "grpo_s0", [sample("g0", 0.0, 0.0)], [0.0, 0.1])) == {}
