"""The menu arena (issue 26, SGE's testbed): PettingZoo API and `arena check-arena menu`, the task fixing the paying
plan (balanced per block), answers read with the strategy tag closed first or not, scores, summaries and details,
the ceilings and the worked example against brute force, strategy reflection through the engine, the configs."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections import Counter
from fractions import Fraction
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test

from arena.arenas.menu import (
    CODE_ALPHABET,
    PLAN_NAMES,
    Menu,
    MenuEnv,
    blind_ceiling,
    ceilings_table,
    menu_of,
    pass_at_k,
    plan_probability,
    read_answer,
    reflection_ceiling,
    rollout_success,
    sge_draw_ceiling,
    task_of,
    tempered,
    worked_example,
)
from arena.core.api.arena import SeatView
from arena.core.api.backend import GenerationRequest
from arena.core.api.records import TrialSpec
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig

pytestmark = pytest.mark.filterwarnings("ignore:.*(Observation|observation|Action space).*:UserWarning")

CONFIGS = ("menu_sge", "menu_grpo")


def _view(env: MenuEnv) -> SeatView:
    obs, _, _, _, info = env.last()
    return SeatView(env=env, agent="player_0", seat=0, observation=obs, action_mask=None, info=dict(info))


def _play(env: MenuEnv, seed: int, answer: str) -> tuple[float, str, dict[str, Any]]:
    """One episode of menu ``seed`` answered with ``answer``: its reward, summary and details."""
    env.reset(seed=seed)
    env.step(answer)
    adapter = env.arena_text_adapter
    return env.rewards["player_0"], adapter.episode_summary(_view(env)), adapter.episode_details(_view(env))


def _answer(menu: Menu, plan: int, code: str | None = None) -> str:
    """The well-formed answer choosing listed plan ``plan`` with ``code`` (its own code by default)."""
    return f"<strategy>{menu.names[plan]}</strategy> {menu.codes[plan] if code is None else code}"


def _wrong_code(code: str) -> str:
    return code[:-1] + CODE_ALPHABET[(CODE_ALPHABET.index(code[-1]) + 1) % len(CODE_ALPHABET)]


# -- the env and its text ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("plans", "tasks"), [(2, 0), (5, 0), (5, 20), (8, 3)])
def test_api(plans: int, tasks: int) -> None:
    api_test(MenuEnv(plans=plans, tasks=tasks), num_cycles=20)


def test_registered_listed_and_checked(factories: dict[str, Any]) -> None:
    env = factories["menu"](plans=3)
    env.reset(seed=1)
    assert env.plans == 3 and env.unwrapped.arena_text_adapter is not None
    assert factories["menu"]().plans == 5
    from arena.arenas import list_arenas
    from arena.core.rollout.check import check_arena

    info = {a.arena_id: a for a in list_arenas()}["menu"]
    assert (info.api, info.num_players, info.source) == ("aec", 1, "arena:menu")
    findings = check_arena("menu", episodes=3)  # `arena check-arena menu`
    assert all(f.ok for f in findings), [f.to_json() for f in findings if not f.ok]
    prompt = next(f for f in findings if f.check == "first prompts").details[0]
    assert "Menu 0: 5 plans." in prompt and "<strategy>PLAN NAME</strategy>" in prompt


def test_the_task_fixes_the_menu_and_its_paying_plan() -> None:
    env, other = MenuEnv(), MenuEnv()
    for seed in [*range(30), 2**31 - 1, 2**40 + 3]:
        env.reset(seed=seed)
        first = env.menu
        env.step(_answer(first, (first.paying + 1) % 5))
        env.reset(seed=seed)
        other.reset(seed=seed)
        assert env.menu == other.menu == first == menu_of(seed) and env.task == seed
        assert sorted(first.names) == sorted(PLAN_NAMES[:5])  # the first K names, in a drawn order
        assert len(set(first.codes)) == 5
        assert all(len(c) == 3 and set(c) <= set(CODE_ALPHABET) for c in first.codes)
    assert len({menu_of(t).names for t in range(40)}) > 10  # listings vary
    assert menu_of(7, code_length=4).paying_name == menu_of(7).paying_name  # the code length changes codes only
    assert len(menu_of(7, code_length=4).codes[0]) == 4


@pytest.mark.parametrize("plans", [2, 3, 5, 8])
def test_every_block_pays_each_name_and_each_position_once(plans: int) -> None:
    for block in (0, 1, 7, 12345):
        menus = [menu_of(block * plans + slot, plans) for slot in range(plans)]
        assert sorted(m.paying_name for m in menus) == sorted(PLAN_NAMES[:plans])
        assert sorted(m.paying for m in menus) == list(range(plans))
    orders = {tuple(menu_of(b * plans + s, plans).paying_name for s in range(plans)) for b in range(30)}
    assert len(orders) > 1  # each block draws its own order


def test_a_fresh_menus_paying_position_does_not_follow_its_listing() -> None:
    """Over many blocks (3 plans, 6 listings), the paying position given the listing is close to uniform."""
    by_listing: dict[tuple[str, ...], Counter[int]] = {}
    for task in range(3 * 4000):
        menu = menu_of(task, 3)
        by_listing.setdefault(menu.names, Counter())[menu.paying] += 1
    assert len(by_listing) == 6
    for counts in by_listing.values():
        total = sum(counts.values())
        assert all(abs(counts[p] / total - 1 / 3) < 0.05 for p in range(3)), counts


def test_tasks_maps_seeds_onto_a_pool_of_menus() -> None:
    env = MenuEnv(tasks=20)
    for seed in (5, 25, 45, 20 * 1000 + 5):
        env.reset(seed=seed)
        assert env.task == 5 == task_of(seed, 20) and env.menu == menu_of(5)
        assert env.task_id == "5:5" and env.infos["player_0"]["task_id"] == "5:5"
    assert task_of(37) == 37 and task_of(-1) == 2**63 - 1


def test_the_observation_lists_the_plans_and_nothing_secret() -> None:
    env = MenuEnv()
    rules = set()
    for seed in range(10):
        env.reset(seed=seed)
        view, menu = _view(env), env.menu
        adapter = env.arena_text_adapter
        listed = "\n".join(f"- Plan {n}: code {c}" for n, c in zip(menu.names, menu.codes, strict=True))
        assert adapter.observation(view) == f"Menu {seed}: 5 plans.\n{listed}"
        assert adapter.legal_moves(view) == []  # free text: no move list
        assert "<strategy>PLAN NAME</strategy>" in adapter.answer_format(view)
        rules.add(adapter.rules(view))
        assert env.observe("player_0").tolist() == [seed, 5, 0]
        assert adapter.episode_summary(view) == "No answer was given."
        assert adapter.episode_details(view)["outcome_key"] == "none"
    assert len(rules) == 1  # the same rules whatever the menu


# -- answers -----------------------------------------------------------------------------------------------------

MENU = Menu(task=0, names=("Ember", "Amber", "Delta"), codes=("KTX", "MNP", "SVZ"), paying=2)


@pytest.mark.parametrize(
    ("answer", "plan", "code", "closed", "first"),
    [
        ("<strategy>Delta</strategy> SVZ", 2, "SVZ", True, True),
        ("<strategy>I pick plan delta.</strategy>\ncode: SVZ", 2, "SVZ", True, True),  # any case, other words
        ("<strategy>Delta</strategy> <action>SVZ</action>", 2, "SVZ", True, True),
        ("<strategy>Delta</strategy>\n```\nSVZ.\n```", 2, "SVZ", True, True),
        ("<strategy>Delta, code SVZ</strategy> SVZ", 2, "SVZ", True, False),  # code written inside the strategy
        ("SVZ <strategy>Delta</strategy> SVZ", 2, "SVZ", True, False),  # code before the strategy
        ("<strategy>Delta</strategy> the Code is KTX", 2, "KTX", True, True),  # the first code-form word after
        ("<strategy>Delta</strategy> svz", 2, None, True, True),  # lower case is not the code's form
        ("<strategy>Delta</strategy> SV Z", 2, None, True, True),
        ("<strategy>Delta</strategy>", 2, None, True, True),
        ("<strategy>Delta SVZ", None, None, False, False),  # never closed
        ("Delta</strategy> SVZ", None, None, False, False),  # never opened
        ("Delta SVZ", None, None, False, False),
        ("<strategy>Deltas</strategy> SVZ", None, "SVZ", True, True),  # whole words only
        ("<strategy>Delta or Amber</strategy> SVZ", None, "SVZ", True, True),  # two plans: none
        ("<strategy>Falcon</strategy> SVZ", None, "SVZ", True, True),  # not on this menu
        ("", None, None, False, False),
    ],
)
def test_answers_are_read(answer: str, plan: int | None, code: str | None, closed: bool, first: bool) -> None:
    read = read_answer(answer, MENU)
    assert (read.plan, read.code, read.closed, read.closed_first) == (plan, code, closed, first)


@given(
    st.text(max_size=200)
    | st.lists(st.sampled_from(["<strategy>", "</strategy>", "Delta", " SVZ", "KTX", "x"])).map("".join)
)
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_any_text_is_an_answer(text: str) -> None:
    env = MenuEnv(plans=3)
    env.reset(seed=4)
    adapter = env.arena_text_adapter
    parsed = adapter.parse_answer(_view(env), text)
    assert parsed.valid and parsed.action == text and parsed.error is None  # never a parse failure
    env.step(parsed.action)
    assert env.rewards["player_0"] in (0.0, 1.0) and env.terminations["player_0"]
    details = adapter.episode_details(_view(env))
    json.dumps(details)
    assert details["score"] == env.rewards["player_0"] == float(details["plan_right"] and details["code_right"])
    assert f"(score {int(details['score'])})" in adapter.episode_summary(_view(env))


def test_scores_summaries_and_details_for_every_plan_and_code() -> None:
    env = MenuEnv()
    seed = 11
    menu = menu_of(seed)
    pay, name = menu.paying, menu.paying_name
    adapter = env.arena_text_adapter
    for plan in range(5):
        chosen = menu.names[plan]
        own, wrong = menu.codes[plan], _wrong_code(menu.codes[plan])
        for code, how in [(own, "own"), (wrong, "wrong"), ("", "none")]:
            reward, summary, details = _play(env, seed, _answer(menu, plan, code))
            win = plan == pay and how == "own"
            assert reward == (1.0 if win else 0.0)
            assert env.arena_outcome(env.rewards, "player_0") == ("win" if win else "loss")
            if plan != pay:
                said = {
                    "own": f"Your code {own} was plan {chosen}'s code.",
                    "wrong": f"Your code {wrong} was not plan {chosen}'s code ({own}).",
                    "none": "You wrote no code after the strategy.",
                }[how]
                assert summary == f"Plan {chosen} failed: it is not the plan that pays (score 0). {said}"
                assert name not in summary  # a miss does not name the paying plan
            else:
                assert (
                    summary
                    == {
                        "own": f"Plan {name} is the plan that pays and your code {own} is its code (score 1).",
                        "wrong": f"Plan {name} is the plan that pays, but your code {wrong} is not its code {own} "
                        "(score 0).",
                        "none": f"Plan {name} is the plan that pays, but you wrote no code after the strategy "
                        "(score 0).",
                    }[how]
                )
            assert details == {
                "task_id": f"5:{seed}",
                "score": reward,
                "outcome_key": chosen + ("+code" if how == "own" else ""),
                "plan": chosen,
                "plan_right": plan == pay,
                "code": code or None,
                "code_right": how == "own",
                "strategy_closed": True,
                "strategy_closed_first": True,
                "paying": name,
            }
            assert (
                adapter.action_name(_view(env), _answer(menu, plan, code)) == f"plan {chosen}, code {code or '(none)'}"
            )
    for answer, summary in [
        (f"<strategy>{name} {menu.paying_code}", "Your answer has no closed <strategy>...</strategy>, so it chose no "
         "plan (score 0)."),
        ("<strategy>any</strategy> KKK", "Your strategy named none of the listed plans, so it chose no plan "
         "(score 0)."),
        (f"<strategy>{menu.names[0]} {menu.names[1]}</strategy> KKK", f"Your strategy named more than one plan "
         f"({menu.names[0]}, {menu.names[1]}), so it chose no plan (score 0)."),
    ]:  # fmt: skip
        reward, said, details = _play(env, seed, answer)
        assert (reward, said, details["outcome_key"], details["plan"]) == (0.0, summary, "no plan", None)
    assert _play(env, seed, "no tag")[2]["strategy_closed"] is False


# -- ceilings ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("plans", "tasks"), [(5, 20), (3, 6), (4, 7), (5, 5), (8, 8)])
def test_blind_ceiling_by_trying_every_fixed_name_and_position(plans: int, tasks: int) -> None:
    env = MenuEnv(plans=plans)
    best = Fraction(0)
    for name in PLAN_NAMES[:plans]:
        wins = sum(
            _play(env, t, _answer(menu_of(t, plans), menu_of(t, plans).names.index(name)))[0] for t in range(tasks)
        )
        best = max(best, Fraction(int(wins), tasks))
    for position in range(plans):
        wins = sum(_play(env, t, _answer(menu_of(t, plans), position))[0] for t in range(tasks))
        best = max(best, Fraction(int(wins), tasks))
    assert blind_ceiling(range(tasks), plans) == best
    if tasks % plans == 0:
        assert best == Fraction(1, plans)


@pytest.mark.parametrize("plans", [3, 5])
def test_reflection_ceiling_by_ruling_out_every_set_of_failed_plans(plans: int) -> None:
    """One block of menus (each plan pays in one: the prior of a fresh menu). For every set F of j plan names
    known to have failed, the menus consistent with it are those whose paying plan is not in F; the best single plan
    outside F wins 1/(K − j) of them, played through the env."""
    env = MenuEnv(plans=plans)
    block = range(plans)
    for j in range(plans):
        for failed in itertools.combinations(PLAN_NAMES[:plans], j):
            consistent = [t for t in block if menu_of(t, plans).paying_name not in failed]
            best = max(
                Fraction(int(sum(_play(env, t, _answer(menu_of(t, plans), menu_of(t, plans).names.index(c)))[0]
                                 for t in consistent)), len(consistent))
                for c in PLAN_NAMES[:plans] if c not in failed
            )  # fmt: skip
            assert best == reflection_ceiling(plans, j) == Fraction(1, plans - j)
    with pytest.raises(ValueError):
        reflection_ceiling(plans, plans)


def test_summaries_let_a_reflection_rule_out_failed_plans() -> None:
    """A policy that remembers the plans the summaries called failed and tries the next listed one never repeats a
    failed plan; over one block its j-th attempt wins 1/(K − j) of the menus still unsolved, and the K-th all."""
    env = MenuEnv()
    failed: dict[int, set[str]] = {t: set() for t in range(5)}
    solved: set[int] = set()
    for attempt in range(5):
        tried = [t for t in range(5) if t not in solved]
        wins = 0
        for t in tried:
            menu = menu_of(t)
            plan = next(i for i, n in enumerate(menu.names) if n not in failed[t])
            reward, summary, _ = _play(env, t, _answer(menu, plan))
            found = re.match(r"Plan (\w+) failed", summary)
            if reward:
                solved.add(t)
                wins += 1
            else:
                assert found is not None and found.group(1) not in failed[t]
                failed[t].add(found.group(1))
        assert Fraction(wins, len(tried)) == reflection_ceiling(5, attempt)
    assert solved == set(range(5))


def test_sge_draw_ceiling() -> None:
    assert sge_draw_ceiling(5) == Fraction(3, 4) * Fraction(1, 5) + Fraction(1, 4) * Fraction(1, 4) == Fraction(17, 80)
    assert sge_draw_ceiling(5, successes=True) == Fraction(13, 20) / 5 + Fraction(1, 16) + Fraction(1, 10)
    assert sge_draw_ceiling(5, p_negative=Fraction(0), p_positive=Fraction(0)) == Fraction(1, 5)
    assert sge_draw_ceiling(5, p_negative=Fraction(1), p_positive=Fraction(0)) == reflection_ceiling(5, 1)


@pytest.mark.parametrize(("q_paying", "accuracy"), [(Fraction(1, 5), Fraction(1)), (Fraction(1, 2), Fraction(3, 4)),
                                                    (Fraction(1, 10), Fraction(9, 10))])  # fmt: skip
def test_rollout_success_and_pass_at_k_by_enumerating_outcomes(q_paying: Fraction, accuracy: Fraction) -> None:
    """A policy picks the paying plan with q (the rest spread over the other plans) and then its own code with the
    given accuracy (else a wrong code): every (plan, code) outcome is played through the env and weighted."""
    env, seed = MenuEnv(), 3
    menu = menu_of(seed)
    others = [i for i in range(5) if i != menu.paying]
    plan_probs = {menu.paying: q_paying, **{i: (1 - q_paying) / len(others) for i in others}}
    outcomes = [
        (p_plan * p_code, _play(env, seed, _answer(menu, plan, code))[0])
        for plan, p_plan in plan_probs.items()
        for code, p_code in [(menu.codes[plan], accuracy), (_wrong_code(menu.codes[plan]), 1 - accuracy)]
    ]
    success = sum((w for w, reward in outcomes if reward), Fraction(0))
    assert sum(w for w, _ in outcomes) == 1
    assert success == rollout_success(q_paying, accuracy)
    for k in (1, 2, 3):
        at_least_one = sum(
            (math.prod(w for w, _ in combo) for combo in itertools.product(outcomes, repeat=k)
             if any(reward for _, reward in combo)),
            Fraction(0),
        )  # fmt: skip
        assert at_least_one == pass_at_k(success, k) == 1 - (1 - success) ** k
    with pytest.raises(ValueError):
        pass_at_k(success, 0)
    with pytest.raises(ValueError):
        rollout_success(Fraction(3, 2), accuracy)


def test_tempering() -> None:
    assert tempered([0.2, 0.3, 0.5], 1.0) == pytest.approx([0.2, 0.3, 0.5])
    hot, cold = tempered([0.02, 0.98], 1.2), tempered([0.02, 0.98], 0.7)
    assert sum(hot) == pytest.approx(1.0) and hot[0] == pytest.approx(
        0.02 ** (1 / 1.2) / (0.02 ** (1 / 1.2) + 0.98 ** (1 / 1.2))
    )
    assert cold[0] < 0.02 < hot[0]
    assert tempered([0.0, 1.0], 2.0) == [0.0, 1.0]
    assert plan_probability(0.2, 0.5, 5) == pytest.approx(0.2)  # uniform stays uniform
    assert plan_probability(0.02, 1.0, 5) == pytest.approx(0.02)
    with pytest.raises(ValueError):
        tempered([0.5, 0.6], 1.0)
    with pytest.raises(ValueError):
        tempered([0.5, 0.5], 0.0)


def test_the_worked_example() -> None:
    """The issue's numbers (0.0033 GRPO, 0.010 all-hot, 0.022 SGE) and what follows from its stated inputs."""
    ex = worked_example()
    for name in ("constant", "rare", "uniform_rest"):
        r = ex[name]
        assert r["sge"] / r["grpo"] == pytest.approx(r["p_hot"] / r["p_cool"])  # the hot strategy's gain
        assert r["sge"] / r["all_hot"] == pytest.approx(0.9 / 0.75)  # the cool code's gain: 1.2 whatever P(plan)
    assert ex["constant"] == pytest.approx(
        {"p_cool": 0.02, "p_hot": 0.02, "grpo": 0.018, "all_hot": 0.015, "sge": 0.018}
    )
    assert ex["rare"]["grpo"] == pytest.approx(0.9 * 0.02 ** (1 / 0.7)) == pytest.approx(0.00337, abs=1e-5)
    assert round(ex["rare"]["grpo"], 4) in (0.0033, 0.0034)  # the 0.0033 (0.003366)
    assert (round(ex["rare"]["all_hot"], 4), round(ex["rare"]["sge"], 4)) == (0.0288, 0.0345)
    assert ex["uniform_rest"] == pytest.approx(
        {"p_cool": 0.006925, "p_hot": 0.030054, "grpo": 0.006233, "all_hot": 0.022541, "sge": 0.027049}, abs=1e-6
    )
    # The issue's own numbers are inconsistent: SGE and all-hot sample the plan at the same T 1.2, yet they imply
    # different P(plan) there, and their ratio is 2.2, not 0.9 / 0.75.
    implied = ex["issue_implied"]
    assert implied["sge"] == pytest.approx(0.02444, abs=1e-5) and implied["all_hot"] == pytest.approx(0.01333, abs=1e-5)
    assert ex["issue"]["sge"] / ex["issue"]["all_hot"] == pytest.approx(2.2)
    # The nearest reading: P_1.2 ≈ 0.024 with 0.9 for SGE's whole code but 0.75 per character of all-hot's 3.
    sge_near, all_hot_near = 0.9 * 0.024, 0.75**3 * 0.024
    assert sge_near == pytest.approx(0.022, abs=5e-4) and all_hot_near == pytest.approx(0.010, abs=5e-4)
    # Whenever heating raises P(plan) by more than 1.2: SGE > all-hot > GRPO, also in pass@8.
    for name in ("rare", "uniform_rest"):
        r = ex[name]
        assert r["sge"] > r["all_hot"] > r["grpo"]
        assert pass_at_k(r["sge"], 8) > pass_at_k(r["all_hot"], 8) > pass_at_k(r["grpo"], 8)


def test_the_documented_numbers() -> None:
    """docs/testbeds.md section 5 and the configs' header comments quote these."""
    table = ceilings_table()
    for row in [
        "| 1/5 = 0.2000 |",
        "| strategy reflection ruling out 1 failed plan | 1/4 = 0.2500 |",
        "| strategy reflection ruling out 3 failed plans | 1/2 = 0.5000 |",
        "| SGE's draw on a menu met before (failures only; p_negative 0.25) | 0.2125 |",
        "| SGE's draw with a success stored too (p_positive 0.1) | 0.2925 |",
        "| 0.8322 |",
        "| rare | 0.00337 | 0.02879 | 0.03455 | 0.0266 | 0.2452 |",
        "| uniform_rest | 0.00623 | 0.02254 | 0.02705 | 0.0488 | 0.1970 |",
        "| issue | 0.00330 | 0.01000 | 0.02200 | 0.0261 | 0.1630 |",
    ]:
        assert row in table, row
    seen = [1 - Fraction(19, 20) ** (8 * i) for i in (1, 5)]
    assert [round(float(s), 3) for s in seen] == [0.337, 0.871]


# -- strategy reflection on the menu, through the engine ------------------------------------------------------------


def _avoider(request: GenerationRequest, rng: np.random.Generator) -> str:
    """A policy that chooses the first listed plan no reflection called failed, and writes its code."""
    text = request.messages[-1].content
    listed = re.findall(r"^- Plan (\w+): code (\w+)$", text, re.MULTILINE)
    failed = set(re.findall(r"Plan (\w+) failed", text))
    name, code = next((n, c) for n, c in listed if n not in failed)
    return f"<strategy>{name}</strategy> {code}"


def test_negative_reflection_stops_repeating_a_failed_plan() -> None:
    from arena.plugins.sge import SGE

    from ..core.helpers import play

    def specs(iteration: int) -> list[TrialSpec]:
        return [
            TrialSpec(
                trial_id=f"it{iteration}-t{t}", arena_id="menu", seats=("model:scripted",), seed=t, episodes=1,
                meta={"iteration": iteration}, options={"sge": {"p_negative": 1.0, "p_positive": 0.0}},
            )
            for t in range(5)
        ]  # fmt: skip

    plugin = SGE()
    first, _, _ = play(specs(0), ["sge"], {"sge": plugin}, None, _avoider)
    plans = [t.final.details["player_0"]["plan"] for t in first]
    assert plans == [menu_of(t).names[0] for t in range(5)]  # no reflection yet: the first listed plan
    assert sum(t.final.returns["player_0"] for t in first) == 1  # one block: the first position pays once
    step = first[0].final.steps[0]
    strategy_bytes = len(step.answer[: step.answer.index("</strategy>") + len("</strategy>")].encode())
    assert step.completion.temperatures[:strategy_bytes] == (1.2,) * strategy_bytes  # the plan at T_s
    assert set(step.completion.temperatures[strategy_bytes:]) == {0.7}  # the code at T_a
    assert all(t.final.details["player_0"]["strategy_closed_first"] for t in first)
    again, _, _ = play(specs(1), ["sge"], {"sge": plugin}, None, _avoider)
    for before, after in zip(first, again, strict=True):
        prompt = after.final.steps[0].prompt[-1].content
        if before.final.returns["player_0"]:
            assert "An earlier attempt" not in prompt  # only successes stored, p_positive 0: no reflection
            assert after.final.details["player_0"]["plan"] == before.final.details["player_0"]["plan"]
        else:
            failed = before.final.details["player_0"]["plan"]
            assert f"Plan {failed} failed: it is not the plan that pays" in prompt  # the summary as feedback
            assert after.final.details["player_0"]["plan"] != failed  # not repeated
    # The four menus that failed now win 1/(K − 1) of the time: exactly one of them.
    assert (
        sum(a.final.returns["player_0"] for b, a in zip(first, again, strict=True) if not b.final.returns["player_0"])
        == 1
    )


# -- the configs -------------------------------------------------------------------------------------------------


def test_configs_load_and_are_twins() -> None:
    from arena.core.learn.task_recurrence import unreachable
    from arena.plugins import sge

    s, g = (load_config(TrainConfig, name) for name in CONFIGS)
    for c in (s, g):
        assert c.arena == "menu" and c.arena_kwargs == {"plans": 5} and c.task_pool == 20 and not c.opponents
        assert (c.iterations, c.groups, c.group_size, c.seed, c.trial.episodes) == (20, 8, 8, 0, 1)
        assert c.learners[0].model == "smollm2-menu" and c.learners[0].unused_options == []
        assert (c.eval.every, c.eval.games, c.eval.seed, c.eval.arena_kwargs) == (10, 100, 0, {"tasks": 20})
        assert unreachable(c) == {}
    assert s.trial == g.trial and s.dynamic_sampling == g.dynamic_sampling
    assert attrs.evolve(s.learners[0], plugins=["grpo"], options={"grpo": {"std_norm": True}}) == g.learners[0]
    assert s.learners[0].plugins == ["sge", "grpo"] and g.learners[0].plugins == ["grpo"]
    opts = sge.settings(s.learners[0].options)
    assert (opts.strategy_temperature, opts.action_temperature, opts.p_negative, opts.p_positive) == (
        1.2,
        0.7,
        0.25,
        0.1,
    )
    assert opts.mixed_temperature and opts.reflection and opts.strategy_max_tokens < s.trial.prompt.max_new_tokens
    assert g.trial.prompt.temperature == opts.action_temperature  # GRPO: the whole answer at T_a
    # Evaluation plays the recurring menus: 100 seeds onto menus 0..19, five games each; four whole blocks.
    tasks = [task_of(s.eval.seed + k, 20) for k in range(s.eval.games)]
    assert sorted(set(tasks)) == list(range(20)) and all(tasks.count(t) == 5 for t in range(20))
    assert blind_ceiling(range(s.task_pool), 5) == Fraction(1, 5)
