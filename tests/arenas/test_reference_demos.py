"""``arena demos``: real prompts with reference answers, one per task, for ``arena sft``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.arenas import instruct
from arena.core.api.errors import ArenaError
from arena.core.cli.main import cli
from arena.core.cli.reference_demos import collect_reference_demos, reference_tasks


def test_every_instruct_task_once_with_a_reference_that_meets_every_constraint() -> None:
    demos = collect_reference_demos("instruct", "train")
    tasks = instruct.tasks_for("train")
    assert [d["task_id"] for d in demos] == [t.task_id for t in tasks]
    for demo, task in zip(demos, tasks, strict=True):
        assert all(instruct.evaluate(task, demo["answer"]))
        prompt = demo["messages"][-1]["content"]
        # the engine's prompt: the arena's rules, the task, the answer-format line
        assert task.prompt() in prompt and prompt.rstrip().endswith("Reply with the response only.")


def test_a_prompt_that_extends_another_tasks_prompt_is_attributed_to_the_longer_task() -> None:
    tasks = reference_tasks("instruct", "all")
    nested = [(a, b) for a in tasks for b in tasks if a is not b and a.needle in b.needle]
    assert nested, "the generated tasks no longer contain a prompt inside another; the rule is untested"
    short, long = nested[0]
    demos = {d["task_id"]: d for d in collect_reference_demos("instruct", "all")}
    assert demos[long.task_id]["answer"] == long.answer and demos[short.task_id]["answer"] == short.answer


def test_coding_demos_are_the_fenced_reference_functions() -> None:
    demos = collect_reference_demos("coding", "test", limit=3)
    assert len(demos) == 3
    for demo, task in zip(demos, reference_tasks("coding", "test")[:3], strict=True):
        assert demo["answer"] == task.answer and demo["answer"].startswith("```python\ndef ")
        assert task.needle in demo["messages"][-1]["content"]


def test_arenas_without_references_and_empty_selections_are_errors() -> None:
    with pytest.raises(ArenaError, match="has no reference answers"):
        reference_tasks("kuhn_poker")
    with pytest.raises(ArenaError, match="no tasks in split"):
        reference_tasks("instruct", "train", tiers=[9])


def test_cli_writes_jsonl_that_sft_reads(tmp_path: Path) -> None:
    from arena.core.learn.sft import read_examples

    out = tmp_path / "demos.jsonl"
    result = CliRunner().invoke(cli, ["demos", "instruct", "--split", "test", "--tier", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == len(instruct.tasks_for("test", tiers=[1])) and "demos: " in result.output
    examples = read_examples(out)
    assert examples[0].answer == lines[0]["answer"] and examples[0].messages[-1].role == "user"
