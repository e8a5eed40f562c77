"""DAPO's dynamic sampling: the pure parts on hand-made groups, the seeds of extra rounds, and tiny runs on the
``guess_digit`` test arena with the toy model (metrics, what is trained, feature off = untouched, exact resume)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from arena.core.api.errors import ConfigError
from arena.core.api.markers import hookimpl
from arena.core.api.records import TrialRecord, TrialSpec
from arena.core.api.samples import Sample
from arena.core.config.loader import load_config
from arena.core.host import catalog
from arena.core.learn import dynamic_sampling as ds
from arena.core.learn.run import Run
from arena.core.learn.run_config import TrainConfig
from arena.populations import Population, PopulationConfig
from tests.core.free_text_env import register_guess_arena

# --------------------------------------------------------------------------------------------------------------
# Pure functions
# --------------------------------------------------------------------------------------------------------------


def sample(trial: str, group: str, **terms: float) -> Sample:
    return Sample(
        learner="agent", trial_id=trial, episode=0, turn=0, agent="player_0", kind="action", context_ids=(1,),
        completion_ids=(2,), behaviour_logprobs=(0.0,), temperatures=(1.0,), group_id=group, reward_terms=terms,
    )  # fmt: skip


def test_informative_needs_a_spread_above_min_std() -> None:
    assert not ds.is_informative([])
    assert not ds.is_informative([1.0])  # no baseline in a group of one
    assert not ds.is_informative([0.0, 0.0, 0.0]) and not ds.is_informative([1.0, 1.0])  # DAPO: accuracy 0 or 1
    assert not ds.is_informative([0.1, 0.1, 0.1])  # np.std of these is 1.4e-17, not 0
    assert ds.is_informative([0.0, 1.0, 1.0]) and ds.is_informative([-1.0, 2.0])
    # [0, 0.1]: population std 0.05.
    assert ds.is_informative([0.0, 0.1], min_std=0.04) and not ds.is_informative([0.0, 0.1], min_std=0.05)


def test_trial_reward_is_the_mean_of_its_samples_and_may_use_some_terms() -> None:
    # g0: two lost games of 3 and 2 turns (γ = 1: every turn carries -1). The mean says "same outcome"; a sum
    # (-3 vs -2) would call the group informative although every advantage in it is 0.
    lost = [sample("a", "g0", env=-1.0)] * 3 + [sample("b", "g0", env=-1.0)] * 2
    # g1: both solved, one with an overlong penalty.
    solved = [sample("c", "g1", env=1.0), sample("d", "g1", env=1.0, overlong=-0.5)]
    samples = [*lost, *solved]
    assert ds.trial_rewards(samples) == {"a": ("g0", -1.0), "b": ("g0", -1.0), "c": ("g1", 1.0), "d": ("g1", 0.5)}
    assert ds.group_rewards(samples) == {"g0": [-1.0, -1.0], "g1": [1.0, 0.5]}
    assert ds.informative_groups(ds.group_rewards(samples)) == ["g1"]
    # DAPO's accuracy filter: the environment's reward only, the overlong penalty left out.
    assert ds.group_rewards(samples, ["env"]) == {"g0": [-1.0, -1.0], "g1": [1.0, 1.0]}
    assert ds.informative_groups(ds.group_rewards(samples, ["env"])) == []
    assert ds.sample_reward(solved[1], ["missing"]) == 0.0


def test_keep_the_first_informative_groups_in_play_order() -> None:
    played = ["g0", "g1", "g2", "g0-r1", "g1-r1", "g0-r2"]
    informative = {"g2", "g0", "g1-r1", "g0-r2"}
    assert ds.keep_groups(played, informative, 3) == ["g0", "g2", "g1-r1"]
    assert ds.keep_groups(played, informative, 10) == ["g0", "g2", "g1-r1", "g0-r2"]  # rounds ran out
    assert ds.keep_groups(played, set(), 3) == []


def test_summary_metrics() -> None:
    metrics = ds.RoundsSummary(rounds=2, groups_played=8, groups_informative=5, groups_kept=4).metrics()
    assert metrics == {
        "dynamic/rounds": 2.0,
        "dynamic/groups_played": 8.0,
        "dynamic/groups_informative": 5.0,
        "dynamic/groups_kept": 4.0,
        "dynamic/filtered_fraction": 0.5,
    }
    assert ds.RoundsSummary(0, 0, 0, 0).metrics()["dynamic/filtered_fraction"] == 0.0


# --------------------------------------------------------------------------------------------------------------
# Seeds of extra rounds
# --------------------------------------------------------------------------------------------------------------


def population(task_pool: int = 0, opponents: Sequence[tuple[str, float]] = ()) -> Population:
    return Population(PopulationConfig(), [("agent", "model:a")], list(opponents), seed=7, task_pool=task_pool)


def test_round_seeds_are_fixed_by_run_seed_iteration_and_round() -> None:
    seeds = {(it, r): ds.round_seed(7, it, r) for it in range(3) for r in range(1, 4)}
    assert len(set(seeds.values())) == len(seeds)  # every (iteration, round) its own seed
    assert seeds == {(it, r): ds.round_seed(7, it, r) for it in range(3) for r in range(1, 4)}  # and always the same
    assert ds.round_seed(8, 0, 1) != ds.round_seed(7, 0, 1)
    with pytest.raises(ValueError, match="round 0"):
        ds.round_seed(7, 0, 0)


def test_extra_rounds_draw_fresh_groups_and_leave_round_zero_alone() -> None:
    pop = population(opponents=[("random", 1.0), ("conservative", 1.0)])
    round0 = pop.matchups(4, 3, "random")
    first = ds.extra_matchups(pop, "agent", 4, 1, 2, "random")
    fresh = population(opponents=[("random", 1.0), ("conservative", 1.0)])
    assert first == ds.extra_matchups(fresh, "agent", 4, 1, 2, "random")
    second = ds.extra_matchups(pop, "agent", 4, 2, 2, "random")
    assert pop.matchups(4, 3, "random") == round0  # drawing extra rounds changes nothing in round 0
    assert [m.group_id for m in first] == ["it00004-agent-g000-r1", "it00004-agent-g001-r1"]
    assert [m.group_id for m in second] == ["it00004-agent-g000-r2", "it00004-agent-g001-r2"]
    seeds = [m.seed for m in [*round0, *first, *second]]
    assert len(set(seeds)) == len(seeds)
    assert {m.opponent for m in [*first, *second]} <= {"random", "conservative"}
    # A task pool holds for extra rounds too.
    pooled = population(task_pool=5)
    assert all(0 <= m.seed < 5 for r in (1, 2, 3) for m in ds.extra_matchups(pooled, "agent", 0, r, 4, "first"))


# --------------------------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------------------------


def test_config_section_validates_like_the_others(tmp_path: Path) -> None:
    base = {"arena": "kuhn_poker", "opponents": [{"spec": "random"}]}
    config = load_config(TrainConfig, data={**base, "dynamic_sampling": {"enabled": True, "reward_terms": ["env"]}})
    assert config.dynamic_sampling.enabled and config.dynamic_sampling.max_rounds == 3
    assert config.dynamic_sampling.reward_terms == ["env"] and config.dynamic_sampling.min_std == 0.0
    assert not load_config(TrainConfig, data=base).dynamic_sampling.enabled  # off by default
    with pytest.raises(ConfigError, match=r"unknown key 'dynamic_sampling\.max_round' \(did you mean 'max_rounds'\?\)"):
        load_config(TrainConfig, data={**base, "dynamic_sampling": {"max_round": 2}})
    with pytest.raises(ConfigError, match=r"key 'dynamic_sampling\.enabled' expects bool, got str 'yes'"):
        load_config(TrainConfig, data={**base, "dynamic_sampling": {"enabled": "yes"}})
    with pytest.raises(ConfigError, match="max_rounds must be at least 0"):
        load_config(TrainConfig, data={**base, "dynamic_sampling": {"max_rounds": -1}})
    with pytest.raises(ConfigError, match="group_size >= 2"):
        load_config(TrainConfig, data={**base, "group_size": 1, "dynamic_sampling": {"enabled": True}})


# --------------------------------------------------------------------------------------------------------------
# Tiny runs
# --------------------------------------------------------------------------------------------------------------

CONFIG = """
arena: guess_digit
seed: {seed}
iterations: 2
groups: 2
group_size: 2
opponents: []
learners:
  - name: solo
    model: {model}
    backend: hf
    plugins: [grpo, bonus]
    optim: {{lr: 1.0e-3, micro_batch_tokens: 2048}}
trial:
  invalid_action: {{policy: forfeit, offender_reward: 0.0}}
  prompt: {{max_new_tokens: 4}}
eval: {{games: 2}}
checkpoint: {{every: 1, keep: 3}}
torch_threads: 1
"""


class Bonus:
    """A reward term that decides which groups are informative: the first trial of a group gets ``bonus`` = 1
    when ``rule(group seed)`` holds (the toy model almost never guesses the digit, so the rest is all 0)."""

    def __init__(self, rule: Any) -> None:
        self.rule = rule

    @hookimpl
    def compute_rewards(self, trial: TrialRecord, samples: list[Sample]) -> dict[int, dict[str, float]]:
        first = trial.spec.meta["group_index"] == 0 and self.rule(trial.spec.seed)
        return {i: {"bonus": 1.0 if first else 0.0} for i in range(len(samples))}


def even(seed: int) -> bool:
    return seed % 2 == 0


def never(seed: int) -> bool:
    return False


def always(seed: int) -> bool:
    return True


@pytest.fixture(autouse=True)
def guess_arena() -> Iterator[None]:
    register_guess_arena()
    yield
    catalog.reset()


class Recorded:
    """A run whose engine and trainer calls are recorded: the training trial specs and the updated samples."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.specs: list[TrialSpec] = []
        self.updates: list[list[Sample]] = []
        learner = run.learners[0]
        engine_run, update = learner.engine.run, learner.trainer.update

        def record_run(specs: Sequence[TrialSpec]) -> list[TrialRecord]:
            self.specs.extend(s for s in specs if s.training)
            return engine_run(specs)

        def record_update(samples: Sequence[Sample]) -> dict[str, float]:
            self.updates.append(list(samples))
            return update(samples)

        learner.engine.run = record_run
        learner.trainer.update = record_update

    def metrics(self) -> list[dict[str, Any]]:
        lines = (self.run.out_dir / "metrics.jsonl").read_text().splitlines()
        return [{k: v for k, v in json.loads(line).items() if not k.startswith("time/")} for line in lines]


def make_run(
    tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch, rule: Any, name: str, seed: int = 12, **data: Any
) -> Recorded:
    from arena.core.host import plugins as plugin_module

    original = plugin_module.PluginSet.__init__

    def with_bonus(self: Any, names: Any, extra: Any = None) -> None:
        original(self, names, {"bonus": Bonus(rule)})

    path = tmp_path / f"{name}.yaml"
    path.write_text(CONFIG.format(model=toy_dir, seed=seed))
    with monkeypatch.context() as patch:
        patch.setattr(plugin_module.PluginSet, "__init__", with_bonus)
        run = Run(load_config(TrainConfig, path, data=data or None), tmp_path / name, progress=False)
    return Recorded(run)


DYNAMIC = {"enabled": True, "max_rounds": 3}


def test_run_keeps_only_informative_groups(tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = make_run(tmp_path, toy_dir, monkeypatch, even, "on", dynamic_sampling=DYNAMIC)
    rec.run.run()
    lines = [m for m in rec.metrics() if m["iteration"] >= 0]
    assert len(lines) == 2 and len(rec.updates) == 2
    for it, (line, trained) in enumerate(zip(lines, rec.updates, strict=True)):
        specs = [s for s in rec.specs if s.meta["iteration"] == it]
        seeds = {s.group_id: s.seed for s in specs}
        played = list(seeds)
        informative = [g for g in played if even(seeds[g])]
        kept = {s.group_id for s in trained}
        assert kept == set(informative[:2])  # the first two informative groups in play order, nothing else
        assert all(even(seeds[s.group_id]) for s in trained)
        assert line["dynamic/groups_played"] == len(played)
        assert line["dynamic/groups_informative"] == len(informative)
        assert line["dynamic/groups_kept"] == len(kept) == min(2, len(informative))
        assert line["dynamic/filtered_fraction"] == pytest.approx(1 - len(kept) / len(played))
        assert line["rollout/samples"] == len(trained)
        rounds = int(line["dynamic/rounds"])
        assert {s.group_id.rpartition("-r")[2] for s in specs if "-r" in s.group_id} == {
            str(r) for r in range(1, rounds + 1)
        }
        round0 = [g for g in played if "-r" not in g]
        assert len(round0) == 2 and len(specs) == 2 * len(played)  # group_size trials per group
        # Each extra round plays the groups still missing after the rounds before it.
        for r in range(1, rounds + 1):
            before = [g for g in played if "-r" not in g or int(g.rpartition("-r")[2]) < r]
            missing = 2 - sum(even(seeds[g]) for g in before)
            assert sum(g.endswith(f"-r{r}") for g in played) == missing > 0
    # Seed 12 proves something: iteration 0 fills up in one extra round (3 groups played, 2 kept); iteration 1
    # needs all 3 rounds and still ends one group short (5 played, 1 kept).
    assert [(m["dynamic/rounds"], m["dynamic/groups_played"], m["dynamic/groups_kept"]) for m in lines] == [
        (1, 3, 2),
        (3, 5, 1),
    ]

    # Feature off: the same round-0 trials, no extra ones, every group trained.
    off = make_run(tmp_path, toy_dir, monkeypatch, even, "off")
    off.run.run()
    assert [(s.trial_id, s.seed) for s in off.specs] == [
        (s.trial_id, s.seed) for s in rec.specs if "-r" not in s.trial_id
    ]
    assert all(len({s.group_id for s in trained}) == 2 for trained in off.updates)
    assert not any(k.startswith("dynamic/") for m in off.metrics() for k in m)

    # Resume after iteration 1 continues exactly (extra rounds are seeded within the step).
    first = make_run(tmp_path, toy_dir, monkeypatch, even, "resumed", iterations=1, dynamic_sampling=DYNAMIC)
    first.run.run()
    again = make_run(tmp_path, toy_dir, monkeypatch, even, "resumed", dynamic_sampling=DYNAMIC)
    again.run.run(resume=True)
    resumed, reference = again.metrics(), rec.metrics()
    assert resumed[-1]["iteration"] == 1 and resumed[-1] == reference[-1]
    # Iteration 0 equal too, but for the evaluation the 1-iteration run did at its end.
    assert [{k: v for k, v in m.items() if not k.startswith("eval/")} for m in resumed] == [
        {k: v for k, v in m.items() if not k.startswith("eval/")} for m in reference
    ]


def test_enabled_with_every_group_informative_equals_off(
    tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    on = make_run(tmp_path, toy_dir, monkeypatch, always, "on", dynamic_sampling=DYNAMIC)
    off = make_run(tmp_path, toy_dir, monkeypatch, always, "off")
    on.run.run()
    off.run.run()
    assert [s.trial_id for s in on.specs] == [s.trial_id for s in off.specs]
    stripped = [{k: v for k, v in m.items() if not k.startswith("dynamic/")} for m in on.metrics()]
    assert stripped == off.metrics()
    assert all(m["dynamic/rounds"] == 0 and m["dynamic/filtered_fraction"] == 0 for m in on.metrics()[1:])


def test_rounds_run_out(tmp_path: Path, toy_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rec = make_run(
        tmp_path, toy_dir, monkeypatch, never, "none", iterations=1, dynamic_sampling={"enabled": True, "max_rounds": 2}
    )
    rec.run.run()
    line = rec.metrics()[1]
    # 2 groups, then 2 missing in each of the 2 extra rounds; nothing informative, nothing trained.
    assert line["dynamic/rounds"] == 2 and line["dynamic/groups_played"] == 6
    assert line["dynamic/groups_kept"] == 0 and line["dynamic/filtered_fraction"] == 1.0
    assert rec.updates == [[]] and line["rollout/samples"] == 0
    assert len(rec.specs) == 12  # every trial played counts (ratings, rollout metrics)
