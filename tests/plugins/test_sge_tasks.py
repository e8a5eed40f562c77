"""SGE's strategy reflection in the shipped configs: its per-task buffers meet their task again.

The buffers are keyed by the trial seed (a trial's seed is its task), so reflection fires only when a group seed
comes back in a later iteration. These tests draw the real matchups of each shipped SGE config (the population,
``trial_specs_for``), fill the buffers as ``trial_end`` would after every trial of an iteration failed, and count
the rollouts whose prompt got a reflection. The run set-up warns when a per-task mechanism can never meet its
task again (``task_pool: 0``).
"""

from __future__ import annotations

import json
import types
from collections import Counter
from importlib import resources
from pathlib import Path

import pytest
import yaml

from arena.core.cli.logs import configure_logging
from arena.core.config.loader import load_config
from arena.core.learn.run import trial_specs_for
from arena.core.learn.run_config import TrainConfig
from arena.plugins import sge
from arena.populations import Population

from .test_sge import record, turn

ITERATIONS = 3


def shipped_sge_configs() -> list[str]:
    names = []
    for entry in sorted(resources.files("arena.configs").iterdir(), key=lambda p: p.name):
        if not entry.name.endswith(".yaml"):
            continue
        raw = yaml.safe_load(entry.read_text()) or {}
        if any("sge" in (learner.get("plugins") or []) for learner in raw.get("learners") or []):
            names.append(entry.name.removesuffix(".yaml"))
    return names


def test_the_shipped_sge_configs_are_found() -> None:
    assert {"kuhn_sge_empo2_mage", "coding_sge"} <= set(shipped_sge_configs())


def learner_stubs(config: TrainConfig) -> list[types.SimpleNamespace]:
    """What ``trial_specs_for`` reads of a ``Learner``: name, config and unique seat spec (as ``Learner`` builds it)."""
    return [
        types.SimpleNamespace(name=c.name, seat_spec=f"model:{c.model}#{c.name}@hf", config=c) for c in config.learners
    ]


def reflections(config: TrainConfig, iterations: int = ITERATIONS) -> tuple[list[Counter[str]], int]:
    """Per iteration, the reflection kinds drawn by the SGE learners' rollouts when every earlier trial failed,
    and how many groups met a task key an earlier iteration had played."""
    learners = learner_stubs(config)
    population = Population(
        config.population,
        learners=[(s.name, s.seat_spec) for s in learners],
        opponents=[(o.spec, o.weight) for o in config.opponents],
        seed=config.seed,
        task_pool=config.task_pool,
    )
    plugin = sge.SGE()
    seen: set[sge.TaskKey] = set()
    met = 0
    kinds: list[Counter[str]] = []
    for iteration in range(iterations):
        matchups = population.matchups(iteration, config.groups, config.learner_seat)
        drawn: Counter[str] = Counter()
        played: list[tuple[sge.TaskKey, object]] = []
        for stub in learners:
            if "sge" not in stub.config.plugins:
                continue
            mine = [m for m in matchups if m.learner == stub.name]
            specs = trial_specs_for(config, stub, mine, iteration, [s.seat_spec for s in learners])
            assert len(specs) == config.groups * config.group_size
            for k, spec in enumerate(specs):
                seat = spec.meta["learner_seat"]
                key = sge.task_key(spec, seat)
                if k % config.group_size == 0 and key in seen:
                    met += 1
                drawn[plugin.pre_action(turn(spec, seat=seat)).meta["reflection"]] += 1
                played.append((key, record(spec, ["bet high"], "loss", seat=seat)))
        for key, trial in played:
            plugin.trial_end(trial)
            seen.add(key)
        kinds.append(drawn)
    return kinds, met


@pytest.mark.parametrize("name", shipped_sge_configs())
def test_shipped_sge_configs_meet_a_task_again_and_reflect(name: str) -> None:
    config = load_config(TrainConfig, name)
    kinds, met = reflections(config)
    assert kinds[0]["negative"] == kinds[0]["positive"] == 0  # nothing stored before the first iteration
    assert met > 0, f"{name}: no group of iterations 1..{ITERATIONS - 1} plays a task key an earlier one played"
    later = sum(k["negative"] for k in kinds[1:])
    assert later > 0, f"{name}: no rollout of the first {ITERATIONS} iterations drew a failed-sequence reflection"


def test_without_a_task_pool_no_task_recurs_and_nothing_is_reflected() -> None:
    """The counterfactual of the test above: fresh seeds per group (task_pool 0) never reach the buffers."""
    config = load_config(TrainConfig, "kuhn_sge_empo2_mage", ["task_pool=0"])
    kinds, met = reflections(config)
    assert met == 0 and all(k["negative"] == k["positive"] == 0 for k in kinds)


class _SetUpDone(Exception):
    """Raised in place of building the first learner: the run set-up got that far."""


def _stop(*args: object, **kwargs: object) -> None:
    raise _SetUpDone


def warnings_of_set_up(
    config: TrainConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> list[dict[str, object]]:
    """The warning lines ``Run`` logs before it builds its learners (no model is loaded)."""
    from arena.core.learn import run as train

    configure_logging("json")
    monkeypatch.setattr(train, "Learner", _stop)
    capsys.readouterr()
    with pytest.raises(_SetUpDone):
        train.Run(config, tmp_path / "run")
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("level") == "warning"]


def test_run_set_up_warns_when_no_task_can_recur(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config(TrainConfig, "kuhn_sge_empo2_mage", ["task_pool=0"])
    warnings = [w for w in warnings_of_set_up(config, tmp_path, monkeypatch, capsys) if "task_pool" in str(w)]
    assert len(warnings) == 1, warnings  # one line for the whole run
    text = json.dumps(warnings[0])
    assert "sge" in text and "strategy reflection" in text  # the SGE learner's reflection
    assert "empo2" in text and "memory" in text  # and the EMPO² learner's per-task tip memory


@pytest.mark.parametrize(
    "overrides",
    [
        [],  # the shipped config: its tasks recur
        ["task_pool=0", "learners.0.options.sge.reflection=false", "learners.1.plugins=[mage]"],  # nothing needs it
    ],
)
def test_no_warning_when_tasks_recur_or_nothing_needs_them(
    overrides: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = load_config(TrainConfig, "kuhn_sge_empo2_mage", overrides)
    assert [w for w in warnings_of_set_up(config, tmp_path, monkeypatch, capsys) if "task_pool" in str(w)] == []
