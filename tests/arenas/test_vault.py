"""The vault arena (issue 26, EMPO²'s testbed): PettingZoo API, the task fixing the treasure, the observation naming the
vault and nothing else, the summary revealing the chest, the ceilings against brute force, the configs."""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import api_test

import arena.arenas.ceilings as ce
from arena.arenas.vault import (
    VaultEnv,
    blind_ceiling,
    group_hit_probability,
    mean_seen,
    memory_ceiling,
    mixed_group_probability,
    recurrence_table,
    seen_probability,
    task_of,
    treasure_chest,
)
from arena.core.api.arena import SeatView, TextAdapter
from arena.core.api.backend import GenerationRequest
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig
from arena.core.rollout.text_adapter import adapter_for, parse_action

pytestmark = pytest.mark.filterwarnings("ignore:.*(Observation|observation).*:UserWarning")

CONFIGS = ("vault_empo2", "vault_grpo")


def _view(env: VaultEnv) -> SeatView:
    obs, _, _, _, info = env.last()
    return SeatView(env=env, agent="player_0", seat=0, observation=obs, action_mask=np.asarray(info["action_mask"]))


def _play(env: VaultEnv, seed: int, chest: int) -> tuple[float, str]:
    """One episode of vault ``seed`` opening ``chest``: its reward and summary."""
    env.reset(seed=seed)
    env.step(chest)
    return env.rewards["player_0"], env.arena_text_adapter.episode_summary(_view(env))


def _revealed(summary: str) -> int:
    found = re.search(r"The treasure was in chest #(\d+)\.", summary)
    assert found is not None, summary
    return int(found.group(1))


# -- the env and its text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("chests", "tasks"), [(2, 0), (16, 0), (16, 32)])
def test_api(chests: int, tasks: int) -> None:
    api_test(VaultEnv(chests=chests, tasks=tasks), num_cycles=20)


def test_registered_listed_and_checked(factories: dict[str, Any]) -> None:
    env = factories["vault"](chests=6)
    env.reset(seed=1)
    assert env.chests == 6 and env.unwrapped.arena_text_adapter is not None
    assert factories["vault"]().chests == 16
    from arena.arenas import list_arenas
    from arena.core.rollout.check import check_arena

    info = {a.arena_id: a for a in list_arenas()}["vault"]
    assert (info.api, info.num_players, info.source) == ("aec", 1, "arena:vault")
    findings = check_arena("vault", episodes=3)  # `arena check-arena vault`
    assert all(f.ok for f in findings), [f.to_json() for f in findings if not f.ok]


def test_the_task_fixes_the_treasure_and_blocks_use_every_chest_once() -> None:
    env, other = VaultEnv(chests=16), VaultEnv(chests=16)
    for seed in [*range(40), 2**31 - 1, 2**40 + 3]:
        env.reset(seed=seed)
        first = env.treasure
        env.step(first % 16 + 1)
        env.reset(seed=seed)
        other.reset(seed=seed)
        assert env.treasure == other.treasure == first == treasure_chest(seed, 16) and env.task == seed
    for chests in (2, 5, 16):
        for block in (0, 1, 7, 12345):
            found = [treasure_chest(block * chests + slot, chests) for slot in range(chests)]
            assert sorted(found) == list(range(1, chests + 1))
    orders = {tuple(treasure_chest(b * 16 + s, 16) for s in range(16)) for b in range(20)}
    assert len(orders) == 20  # each block draws its own order
    assert len({treasure_chest(t, 16) for t in range(0, 160, 16)}) > 1  # not the same chest per slot


def test_tasks_maps_seeds_onto_a_pool_of_vaults() -> None:
    env = VaultEnv(chests=16, tasks=32)
    for seed in (5, 37, 69, 32 * 1000 + 5):
        env.reset(seed=seed)
        assert env.task == 5 == task_of(seed, 32) and env.treasure == treasure_chest(5, 16)
        assert env.arena_text_adapter.observation(_view(env)).startswith("Vault 5 has ")
    assert task_of(37) == 37 and task_of(-1) == 2**63 - 1


def test_rewards_summaries_and_details() -> None:
    env = VaultEnv(chests=5)
    env.reset(seed=7)
    treasure, adapter = env.treasure, env.arena_text_adapter
    wrong = treasure % 5 + 1
    assert adapter.episode_summary(_view(env)) == "In vault 7 no chest was opened."
    assert adapter.episode_details(_view(env))["outcome_key"] == "none"
    for chest, reward, says in [
        (treasure, 1.0, f"In vault 7 you opened chest {treasure} and found the treasure (score 1)."),
        (wrong, 0.0, f"In vault 7 you opened chest {wrong}, empty (score 0)."),
    ]:
        got, summary = _play(env, 7, chest)
        assert got == reward and env.terminations["player_0"]
        assert summary == f"{says} The treasure was in chest #{treasure}."  # a miss reveals the chest too
        assert _revealed(summary) == treasure
        assert env.arena_outcome(env.rewards, "player_0") == ("win" if reward else "loss")
        details = adapter.episode_details(_view(env))
        assert details == {
            "task_id": "5:7",
            "score": reward,
            "outcome_key": "hit" if reward else "miss",
            "chest": chest,
            "treasure": treasure,
        }
        assert env.infos["player_0"]["task_id"] == "5:7"


def test_the_observation_names_the_vault_and_nothing_secret() -> None:
    env = VaultEnv(chests=16)
    rules, moves = set(), set()
    by_treasure: dict[int, list[int]] = {}
    for seed in range(32):
        env.reset(seed=seed)
        view = _view(env)
        adapter = env.arena_text_adapter
        assert adapter.observation(view) == f"Vault {seed} has 16 chests, numbered 1 to 16, all closed. Open one chest."
        rules.add(adapter.rules(view))
        moves.add(tuple((m.action, m.name) for m in adapter.legal_moves(view)))
        assert env.observe("player_0")["observation"].tolist() == [seed, 16, 0]
        by_treasure.setdefault(env.treasure, []).append(seed)
    assert len(rules) == 1 and len(moves) == 1  # the same text whatever the vault
    assert sorted(len(v) for v in by_treasure.values()) == [2] * 16  # vaults 0..31: every chest twice


@pytest.mark.parametrize(
    ("answer", "chest"),
    [("open chest 4", 4), ("<action>open chest 16</action>", 16), ("7", 7), ("chest 9", 9), ("1: open chest 1", 1)],
)
def test_answers_parse(answer: str, chest: int) -> None:
    env = VaultEnv(chests=16)
    env.reset(seed=0)
    adapter = env.arena_text_adapter
    moves = adapter.legal_moves(_view(env))
    assert [m.action for m in moves] == list(range(1, 17)) == _view(env).legal_actions()  # a move's id is its chest
    assert isinstance(adapter_for(env), TextAdapter) and adapter_for(env) is adapter
    assert all(adapter.action_name(_view(env), m.action) == m.name for m in moves)
    assert parse_action(answer, moves, adapter.all_moves(_view(env))).action == chest
    assert parse_action("0", moves).action is None and parse_action("open chest 17", moves).action is None


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        VaultEnv(chests=1)
    with pytest.raises(ValueError, match="tasks"):
        VaultEnv(tasks=-1)
    env = VaultEnv(chests=3)
    env.reset(seed=0)
    for action in (0, 4, None):
        with pytest.raises(ValueError, match="action must be"):
            env.step(action)


# -- ceilings ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("chests", [3, 4])
def test_trial_ceilings_by_playing_every_two_episode_policy(chests: int) -> None:
    """Episode 1 opens a chest; episode 2 picks a chest per summary text. Over one vault per treasure chest (the
    uniform prior of a fresh vault): the best is 1/N, then 1, because even a miss names the chest."""
    env = VaultEnv(chests=chests)
    seeds = {treasure_chest(t, chests): t for t in range(chests)}  # one block: every chest once
    best_1, best_2 = Fraction(0), Fraction(0)
    for first in range(1, chests + 1):
        played = {c: _play(env, seed, first) for c, seed in seeds.items()}
        best_1 = max(best_1, Fraction(int(sum(r for r, _ in played.values())), chests))
        by_text: dict[str, list[int]] = {}
        for c, (_, text) in played.items():
            by_text.setdefault(text, []).append(c)
        total = sum(
            max(sum(_play(env, seeds[c], a)[0] for c in group) for a in range(1, chests + 1))
            for group in by_text.values()
        )
        best_2 = max(best_2, Fraction(int(total), chests))
    assert best_1 == Fraction(1, chests) and best_2 == 1
    r = ce.ceilings("vault", {"chests": chests}, episodes=3)
    assert r["fixed"] == pytest.approx([float(best_1)] * 3)
    assert r["adaptive"] == pytest.approx([float(best_1), 1.0, 1.0])
    assert r["informed"] == pytest.approx([1.0] * 3)


@pytest.mark.parametrize(("chests", "tasks"), [(16, 32), (4, 6), (3, 7), (5, 5)])
def test_blind_ceiling_by_trying_every_chest_on_the_pool(chests: int, tasks: int) -> None:
    env = VaultEnv(chests=chests)
    best = max(Fraction(int(sum(_play(env, t, c)[0] for t in range(tasks))), tasks) for c in range(1, chests + 1))
    assert blind_ceiling(range(tasks), chests) == best
    assert ce.ceilings("vault", {"chests": chests, "tasks": tasks}, episodes=1)["fixed"] == [pytest.approx(float(best))]
    if tasks % chests == 0:
        assert best == Fraction(1, chests)


def _draw_sequences(pool: int, draws: int, iterations: int) -> Any:
    return itertools.product(range(pool), repeat=draws * iterations)


@pytest.mark.parametrize(("pool", "draws", "earlier"), [(3, 2, 0), (3, 2, 1), (3, 2, 2), (2, 3, 1), (4, 1, 3)])
def test_seen_probability_by_enumerating_every_draw_sequence(pool: int, draws: int, earlier: int) -> None:
    hits = total = 0
    for seq in _draw_sequences(pool, draws, earlier + 1):
        before = set(seq[: draws * earlier])
        now = seq[draws * earlier :]
        hits += sum(task in before for task in now)
        total += len(now)
    assert seen_probability(pool, draws, earlier) == Fraction(hits, total)
    assert seen_probability(pool, draws, earlier) == 1 - (1 - Fraction(1, pool)) ** (draws * earlier)


@pytest.mark.parametrize(("chests", "draws", "earlier"), [(3, 1, 1), (3, 2, 1), (3, 2, 2), (2, 2, 2)])
def test_memory_ceiling_by_playing_every_draw_sequence(chests: int, draws: int, earlier: int) -> None:
    """A pool of one block of vaults (pool = chests). Every iteration's draws are played through the env (a blind
    rollout opens chest 1) and each summary is remembered per vault; at iteration ``earlier`` a rollout whose vault
    has a remembered summary opens the chest it names, else chest 1. Its exact mean success is the ceiling."""
    env = VaultEnv(chests=chests)
    pool = chests
    wins = total = 0
    for seq in _draw_sequences(pool, draws, earlier + 1):
        memory: dict[int, str] = {}
        for task in seq[: draws * earlier]:
            memory[task] = _play(env, task, 1)[1]
        for task in seq[draws * earlier :]:
            chest = _revealed(memory[task]) if task in memory else 1
            wins += int(_play(env, task, chest)[0])
            total += 1
    seen = seen_probability(pool, draws, earlier)
    assert memory_ceiling(chests, seen) == Fraction(wins, total) == seen + (1 - seen) / chests


def test_mean_seen_and_the_group_signal() -> None:
    assert mean_seen(32, 8, 30) == sum(seen_probability(32, 8, i) for i in range(30)) / 30
    assert mean_seen(5, 3, 1) == 0
    # 3 chests, groups of 3 blind rollouts: the groups with at least one win, by enumeration
    wins = sum(any(c == 1 for c in picks) for picks in itertools.product(range(1, 4), repeat=3))
    assert group_hit_probability(3, 3) == Fraction(wins, 27) == Fraction(19, 27)
    assert float(group_hit_probability(16, 8)) == pytest.approx(0.4033, abs=1e-4)
    assert memory_ceiling(16, 0) == Fraction(1, 16) and memory_ceiling(16, 1) == 1
    with pytest.raises(ValueError):
        seen_probability(0, 8, 1)
    with pytest.raises(ValueError):
        mean_seen(32, 8, 0)


def test_the_documented_numbers() -> None:
    """docs/testbeds.md section 4 and the configs' header comments quote these."""
    seen = {i: float(seen_probability(32, 8, i)) for i in (1, 5, 10, 20)}
    assert seen == pytest.approx({1: 0.2243, 5: 0.7192, 10: 0.9211, 20: 0.9938}, abs=1e-4)
    assert float(memory_ceiling(16, seen_probability(32, 8, 1))) == pytest.approx(0.2728, abs=1e-4)
    assert float(mean_seen(32, 8, 20)) == pytest.approx(0.7785, abs=1e-4)
    assert float(mean_seen(32, 8, 30)) == pytest.approx(0.8515, abs=1e-4)
    table = recurrence_table()
    assert "| 10 | 0.9211 | 0.9261 | 0.0625 |" in table and "| mean of 0..29 | 0.8515 | 0.8607 | 0.0625 |" in table


# -- the configs -------------------------------------------------------------------------------------------------


def test_configs_load_and_are_twins() -> None:
    from arena.core.learn.task_recurrence import unreachable
    from arena.plugins import empo2

    e, g = (load_config(TrainConfig, name) for name in CONFIGS)
    for c in (e, g):
        assert c.arena == "vault" and c.arena_kwargs == {"chests": 9} and c.task_pool == 36 and not c.opponents
        assert (c.iterations, c.groups, c.group_size, c.seed, c.trial.episodes) == (30, 8, 8, 0, 1)
        assert c.learners[0].model == "tiny-vault" and c.learners[0].unused_options == []
        assert (c.eval.every, c.eval.games, c.eval.seed, c.eval.arena_kwargs) == (10, 144, 0, {"tasks": 36})
        assert unreachable(c) == {}
    assert e.trial == g.trial and e.learners[0].optim == g.learners[0].optim
    assert e.learners[0].plugins == ["empo2", "grpo"] and g.learners[0].plugins == ["grpo"]
    opts = empo2.settings(e.learners[0].options)
    assert (opts.p, opts.q, opts.novelty) == (0.5, 2 / 3, "off")
    # The model answers with one digit, and the pool is whole blocks: no chest is favoured.
    assert e.arena_kwargs["chests"] <= 9 and e.task_pool % e.arena_kwargs["chests"] == 0
    assert blind_ceiling(range(36), 9) == Fraction(1, 9)
    # Evaluation plays the recurring vaults: 144 seeds onto vaults 0..35, four games each.
    tasks = [task_of(e.eval.seed + k, 36) for k in range(e.eval.games)]
    assert sorted(set(tasks)) == list(range(36)) and all(tasks.count(t) == 4 for t in range(36))


def test_a_perfect_reader_leaves_empo2_nothing_to_distil_and_a_half_reader_almost_always_something() -> None:
    """Why `tiny-vault` follows its tips half the time (``VaultReaderRecipe.follow``): the memory rollouts of a seen
    vault are one group, and GRPO's baseline gives a group without both a win and a loss no advantage."""
    assert mixed_group_probability(1, 8) == 0
    assert float(mixed_group_probability(Fraction(1, 2), 8)) == pytest.approx(0.9922, abs=1e-4)
    assert mixed_group_probability(Fraction(1, 9), 8) == group_hit_probability(9, 8) - Fraction(1, 9) ** 8
    # Brute force over every outcome of a group of 4.
    s = Fraction(3, 10)
    brute = sum(s ** sum(w) * (1 - s) ** (4 - sum(w)) for w in itertools.product((0, 1), repeat=4) if 0 < sum(w) < 4)
    assert mixed_group_probability(s, 4) == brute


def test_the_config_draws_and_memory_iterations() -> None:
    """The run's own task draws (one seed per group) follow the recurrence formula closely; seed 0's memory
    iterations at p = 0.5 are spread over the run (at the paper's 0.25 they were 1, 2, 3, then none before 27)."""
    from arena.plugins.empo2 import iteration_mode
    from arena.populations.matchmaking import default_matchups
    from arena.populations.pool import OpponentPool
    from arena.populations.settings import PFSPConfig

    c = load_config(TrainConfig, "vault_empo2")
    seen: set[int] = set()
    shares = []
    for it in range(c.iterations):
        seeds = [m.seed for m in default_matchups(OpponentPool(), ["agent"], it, c.groups, "first", c.seed,
                                                   PFSPConfig(), c.task_pool, 1)]  # fmt: skip
        assert len(seeds) == c.groups and all(0 <= s < c.task_pool for s in seeds)
        shares.append(sum(s in seen for s in seeds) / len(seeds))
        seen |= set(seeds)
    assert seen == set(range(36))
    assert np.mean(shares) == pytest.approx(float(mean_seen(36, 8, 30)), abs=0.03)
    opts = c.learners[0].options["empo2"]
    modes = {it: iteration_mode(c.seed, it, opts["p"], opts["q"]) for it in range(c.iterations)}
    memory = {it for it, m in modes.items() if m != "plain"}
    assert memory == {1, 2, 3, 4, 6, 13, 14, 16, 20, 22, 24, 27, 29}
    assert {it for it in memory if modes[it] == "memory_on"} == {2, 14}
    assert {it for it in range(30) if iteration_mode(c.seed, it, 0.25, 2 / 3) != "plain"} == {1, 2, 3, 27, 29}


# -- EMPO²'s memory on the vault, through the engine ---------------------------------------------------------------


def _embed(texts: Sequence[str]) -> np.ndarray:
    rows = []
    for text in texts:
        v = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(16)
        rows.append(v / np.linalg.norm(v))
    return np.asarray(rows, dtype=np.float32)


def _tip_copier(request: GenerationRequest, rng: np.random.Generator) -> str:
    """A policy whose tips copy the revealed chest and whose action opens a chest a tip names, else chest 1."""
    text = request.messages[-1].content
    if request.purpose != "action":
        found = re.search(r"The treasure was in chest #(\d+)", text)
        return f"<tip>Vault tip: the treasure is in chest {found.group(1) if found else '?'}.</tip>"
    found = re.search(r"<tip>Vault tip: the treasure is in chest (\d+)", text)
    return f"<action>open chest {found.group(1) if found else 1}</action>"


def test_a_failed_visit_teaches_the_next_memory_rollout_of_the_same_vault() -> None:
    from arena.core.api.records import TrialSpec
    from arena.plugins.empo2 import EMPO2

    from ..core.helpers import play

    def spec(i: int, seed: int, iteration: int, p: float) -> TrialSpec:
        return TrialSpec(
            trial_id=f"it{iteration}-t{i}", arena_id="vault", seats=("model:scripted",), seed=seed, episodes=1,
            arena_kwargs={"chests": 16}, meta={"iteration": iteration, "run_seed": 0, "learner_seat": 0},
            options={"empo2": {"p": p, "q": 0.0, "novelty": "off"}},
        )  # fmt: skip

    seeds = [s for s in range(32) if treasure_chest(s, 16) != 1][:4]  # vaults that chest 1 misses
    plugin = EMPO2(_embed)
    first, _, _ = play(
        [spec(i, s, 0, 0.0) for i, s in enumerate(seeds)], ["empo2"], {"empo2": plugin}, None, _tip_copier
    )
    assert [t.final.outcomes["player_0"] for t in first] == ["loss"] * 4  # plain: blind, chest 1
    again, _, _ = play(
        [spec(i, s, 1, 1.0) for i, s in enumerate(seeds)], ["empo2"], {"empo2": plugin}, None, _tip_copier
    )
    assert [t.final.outcomes["player_0"] for t in again] == ["win"] * 4  # memory: the tip of the miss
    fresh, _, _ = play(
        [spec(0, 40 + 16 * k, 2, 1.0) for k in range(1)], ["empo2"], {"empo2": plugin}, None, _tip_copier
    )
    assert "<tip>" not in fresh[0].episodes[0].steps[0].prompt[-1].content  # another vault has no memory
