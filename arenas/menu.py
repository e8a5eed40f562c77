"""Menu: a single-turn, one-seat arena where exploring means trying another *plan* (SGE's testbed, issue 26).

A *task* is a menu, named by its number: the trial seed (``reset(seed=s)`` plays menu ``s``; with ``tasks`` N, menu
``s % N``). A menu lists ``plans`` plans (default 5; at most 8), each a short name (``Amber``, ``Birch``, ...) and a
short code (``code_length`` characters, default 3, from the small alphabet ``KMNPRSTVXZ``, all distinct within the
menu). Exactly one plan pays, always the same one for the same menu (``menu_of(task).paying``), and only with its
exact code. The observation lists the plans and says nothing about which one pays.

**The answer** is one free-text completion: ``<strategy>PLAN NAME</strategy>`` then the code, e.g.
``<strategy>Delta</strategy> KTX``. The adapter's ``answer_format`` says so; the ``sge`` plugin's strategy prompt asks
for the same shape ("First write a short strategy inside <strategy>...</strategy>, then your code."), samples the
strategy at T_s until ``</strategy>`` and the code after it at T_a. ``read_answer`` reads:

* the *strategy*: the text inside the first closed ``<strategy>…</strategy>`` (exactly the ``sge`` plugin's
  ``extract_strategy``, so what the arena scores is what SGE's reflection stores);
* the *plan*: the one listed plan whose name the strategy contains as a whole word (any case, other words allowed:
  "plan Delta" is Delta); a strategy naming no listed plan, or two or more, chooses none;
* the *code*: the first word after ``</strategy>`` written in the code's form (``code_length`` characters of the
  alphabet, upper case; words are runs of letters and digits, so ``code: KTX``, ``<action>KTX</action>`` and
  ``KTX.`` all give ``KTX``, while ``the``, ``Code`` or ``KT`` are skipped); none if no such word follows the tag;
* whether the strategy tag was *closed first*: a closed tag and no code-form word before its ``</strategy>``
  (neither before ``<strategy>`` nor inside it), i.e. the code was not written inside the strategy segment. A
  measurement only (``episode_details["strategy_closed_first"]``): the score reads the code after the tag.

Score 1 (a win) iff the plan is the paying one and the code is exactly its code; anything else scores 0.

**No answer is a parse failure** (``parse_answer`` always returns an action, as the coding arena's does): an answer
without a closed strategy tag, or whose strategy names no listed plan or several, is judged and scores 0, and its
episode summary says why. Reasons: (1) a parse failure goes to ``trial.invalid_action``, whose ``forfeit`` replaces
the summary with the engine's "gave no legal move" line, so SGE's reflection (which stores the summary as the
failed sequence's feedback) would lose what happened, and whose ``retry`` would give some rollouts a second draw,
breaking the per-rollout success model below; (2) "closed the strategy tag" is one of the things this testbed
measures, so every answer must reach ``episode_details``. Every answer is therefore valid: ``invalid_actions`` stays
0, and the format failures show in ``episode_details`` (``strategy_closed``, ``plan`` None) and ``outcome_key``.

**The episode summary** says whether the strategy chose the paying plan and whether the code was that plan's code,
without naming the paying plan when the strategy missed it, so a failed attempt records "plan X failed":

* ``Plan Delta failed: it is not the plan that pays (score 0). Your code KTX was plan Delta's code.``
* ``Plan Delta is the plan that pays, but your code KTM is not its code KTX (score 0).``
* ``Plan Delta is the plan that pays and your code KTX is its code (score 1).``
* ``Your answer has no closed <strategy>...</strategy>, so it chose no plan (score 0).``

**Paying plans are balanced.** Over every block of ``plans`` consecutive menu numbers (0..K-1, K..2K-1, ...) each
plan name pays exactly once and each list position holds the paying plan exactly once (the block draws two
permutations from its number; the other plans fill the other positions in an order drawn from the menu's number).
So over a pool of whole blocks (``task_pool: 20`` with 5 plans: four blocks) "always the same name" and "always the
same position" each win exactly 1/K; and for a fresh menu the paying plan is uniform and independent of the listing
(name order and codes), so *no* policy that has not met the menu wins more than 1/K (``blind_ceiling``).

**Ceilings and analysis** (exact ``fractions.Fraction`` where the quantity is rational; ``python -m
arena.arenas.menu`` prints the table of docs/testbeds.md, section 5):

* ``rollout_success(p_plan, code_accuracy)``: a rollout wins iff it picks the paying plan (probability ``p_plan``)
  and then writes its code (``code_accuracy``, given the plan): ``p_plan · code_accuracy``;
* ``pass_at_k(success, k)``: k independent rollouts, at least one win: ``1 − (1 − success)^k``;
* ``blind_ceiling(tasks, plans)``: the best fixed policy without knowing the paying plan, ``1/K``;
* ``reflection_ceiling(plans, failed)``: strategy reflection that rules out ``j`` distinct failed plans of a
  recurring menu: ``1/(K − j)``; ``sge_draw_ceiling``: the same for SGE's draw, one failed sequence with probability
  ``p_negative`` (and a successful one, which names the paying plan, with ``p_positive``);
* ``tempered(probs, temperature)`` and ``plan_probability(p, temperature, plans)``: a plan distribution at T = 1
  sampled at another temperature (softmax of log p / T);
* ``worked_example()``: the issue's worked example, below.

**The issue's worked example** ("P(plan) 0.02, code accuracy 0.9 at T 0.7 and 0.75 at T 1.2 gives per-rollout
success 0.0033 for GRPO, 0.010 all-hot, 0.022 SGE"). GRPO samples the whole answer at 0.7, "all-hot" at 1.2, SGE the
strategy at T_s = 1.2 and the code at T_a = 0.7, so with P_T the probability of the paying plan at temperature T:

    GRPO = P_0.7 · 0.9        all-hot = P_1.2 · 0.75        SGE = P_1.2 · 0.9

Two identities follow whatever P(plan) is: SGE / GRPO = P_1.2 / P_0.7 (the gain of the hot strategy alone) and
SGE / all-hot = 0.9 / 0.75 = 1.2 (the gain of the cool code alone). The issue's three numbers do **not** follow from
its stated numbers: 0.022 / 0.010 = 2.2, not 1.2 (backing out P(plan) gives 0.0244 from SGE's number and 0.0133 from
all-hot's, for the same plan temperature), and if P(plan) is 0.02 at every temperature the three are 0.018, 0.015
and 0.018 (no gain for SGE over GRPO). What does follow, reading "P(plan) 0.02" as the paying plan's probability at
T = 1 and tempering it:

* as a rare option, P_T = 0.02^(1/T): P_0.7 = 0.00374, P_1.2 = 0.0384; GRPO = **0.00337** (the issue's 0.0033,
  truncated), all-hot = 0.0288, SGE = 0.0345;
* with the other K − 1 = 4 plans sharing 0.98 equally (``plan_probability``): P_0.7 = 0.00693, P_1.2 = 0.0301;
  GRPO = 0.00623, all-hot = 0.0225, SGE = 0.0270.

The issue's 0.022 and 0.010 are matched by P_1.2 ≈ 0.024 with SGE = 0.9 · 0.024 = 0.0216 and all-hot =
0.75³ · 0.024 = 0.0101, i.e. 0.75 taken as a per-character accuracy over the 3-character code for all-hot but 0.9
as the whole code's accuracy for SGE: two conventions at once. With one convention per-character (0.9³ = 0.729,
0.75³ = 0.422) SGE / all-hot is 1.728. The ordering the issue predicts, SGE > all-hot > GRPO, holds whenever heating
raises P(plan) by more than 0.9 / 0.75 = 1.2 (×10.3 in the rare-option reading, ×4.3 with the rest uniform); if
P(plan) does not depend on temperature, SGE only ties GRPO. pass@k follows from ``pass_at_k``: with 8 rollouts,
1 − (1 − s)^8 (SGE: 0.245 rare-option, 0.197 rest-uniform; GRPO: 0.027, 0.049).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, ClassVar

import attrs
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from arena.arenas.one_decision import FoundIsWin, env_of
from arena.core.api.arena import Move, ParseResult, SeatView

__all__ = [
    "CODE_ALPHABET",
    "DEFAULT_CODE_LENGTH",
    "DEFAULT_PLANS",
    "PLAN_NAMES",
    "Answer",
    "Menu",
    "MenuAdapter",
    "MenuEnv",
    "blind_ceiling",
    "ceilings_table",
    "menu_of",
    "pass_at_k",
    "plan_probability",
    "read_answer",
    "reflection_ceiling",
    "rollout_success",
    "sge_draw_ceiling",
    "task_of",
    "tempered",
    "worked_example",
]

DEFAULT_PLANS = 5
DEFAULT_CODE_LENGTH = 3
#: The plans' names, in the order a menu of K plans takes its K (shown in an order drawn per menu).
PLAN_NAMES: tuple[str, ...] = ("Amber", "Birch", "Cobalt", "Delta", "Ember", "Falcon", "Garnet", "Harbor")
#: The codes' alphabet: upper-case consonants, so no code is an English word and none looks like a plan's name.
CODE_ALPHABET = "KMNPRSTVXZ"
#: The longest answer the action space samples (the env judges any string).
MAX_ANSWER_CHARS = 2000
_SEEDS = 1 << 63

STRATEGY_OPEN, STRATEGY_CLOSE = "<strategy>", "</strategy>"
# The same pattern as the sge plugin's: the first <strategy>, up to the first </strategy> after it.
_STRATEGY = re.compile(re.escape(STRATEGY_OPEN) + r"(.*?)" + re.escape(STRATEGY_CLOSE), re.DOTALL)
_WORD = re.compile(r"[A-Za-z0-9]+")


def task_of(seed: int, tasks: int = 0) -> int:
    """The menu number a reset seed plays: the seed itself, or ``seed % tasks`` when ``tasks`` > 0."""
    task = int(seed) % _SEEDS
    return task % int(tasks) if tasks else task


# -- menus -------------------------------------------------------------------------------------------------------


@attrs.frozen
class Menu:
    """One task: the plans as listed (``names[i]`` with ``codes[i]``) and the listed index of the paying plan."""

    task: int
    names: tuple[str, ...]
    codes: tuple[str, ...]
    paying: int

    @property
    def paying_name(self) -> str:
        return self.names[self.paying]

    @property
    def paying_code(self) -> str:
        return self.codes[self.paying]


def _check_sizes(plans: int, code_length: int) -> None:
    if not 2 <= int(plans) <= len(PLAN_NAMES):
        raise ValueError(f"plans must be between 2 and {len(PLAN_NAMES)}, got {plans}")
    if int(code_length) < 1 or len(CODE_ALPHABET) ** int(code_length) < int(plans):
        raise ValueError(f"code_length must be at least 1 (and leave a code per plan), got {code_length}")


def menu_of(task: int, plans: int = DEFAULT_PLANS, code_length: int = DEFAULT_CODE_LENGTH) -> Menu:
    """Menu ``task``: which plans are listed where, their codes, and which one pays (module docstring: balanced over
    every block of ``plans`` consecutive menus, in name and in position)."""
    plans, code_length = int(plans), int(code_length)
    _check_sizes(plans, code_length)
    task = int(task) % _SEEDS
    block, slot = divmod(task, plans)
    block_rng = np.random.default_rng([block, plans])
    paying_name = int(block_rng.permutation(plans)[slot])
    paying_position = int(block_rng.permutation(plans)[slot])
    others = [i for i in range(plans) if i != paying_name]
    order_rng = np.random.default_rng([task, plans, 1])
    others = [others[i] for i in order_rng.permutation(len(others))]
    order = [*others[:paying_position], paying_name, *others[paying_position:]]
    code_rng = np.random.default_rng([task, plans, code_length, 2])
    picks = code_rng.choice(len(CODE_ALPHABET) ** code_length, size=plans, replace=False)
    codes = tuple(_code(int(n), code_length) for n in picks)
    return Menu(task=task, names=tuple(PLAN_NAMES[i] for i in order), codes=codes, paying=paying_position)


def _code(number: int, length: int) -> str:
    base = len(CODE_ALPHABET)
    chars = []
    for _ in range(length):
        number, digit = divmod(number, base)
        chars.append(CODE_ALPHABET[digit])
    return "".join(reversed(chars))


# -- answers -----------------------------------------------------------------------------------------------------


@attrs.frozen
class Answer:
    """What ``read_answer`` made of an answer (module docstring)."""

    #: The text inside the first closed ``<strategy>…</strategy>``, stripped; None when there is no closed tag.
    strategy: str | None
    #: Listed indices of the plans the strategy names (as whole words, any case).
    named: tuple[int, ...] = ()
    #: The first code-form word after ``</strategy>``; None when there is none.
    code: str | None = None
    #: A closed strategy tag and no code-form word before its ``</strategy>``.
    closed_first: bool = False

    @property
    def closed(self) -> bool:
        return self.strategy is not None

    @property
    def plan(self) -> int | None:
        """The listed index of the chosen plan: the one plan the strategy names, else None."""
        return self.named[0] if len(self.named) == 1 else None


def _is_code(word: str, code_length: int) -> bool:
    return len(word) == code_length and all(c in CODE_ALPHABET for c in word)


def read_answer(text: str, menu: Menu, code_length: int = DEFAULT_CODE_LENGTH) -> Answer:
    """Read an answer against ``menu``: its strategy, the plan it names, the code after the tag, and whether the tag
    was closed before any code (module docstring). Never raises; any string is an answer."""
    if not isinstance(text, str):
        return Answer(None)
    match = _STRATEGY.search(text)
    if match is None:
        return Answer(None)
    strategy = match.group(1).strip()
    named = tuple(
        i
        for i, name in enumerate(menu.names)
        if re.search(rf"(?<![A-Za-z0-9]){re.escape(name)}(?![A-Za-z0-9])", strategy, re.IGNORECASE)
    )
    code = next((w for w in _WORD.findall(text[match.end() :]) if _is_code(w, code_length)), None)
    closed_first = not any(_is_code(w, code_length) for w in _WORD.findall(text[: match.end()]))
    return Answer(strategy=strategy, named=named, code=code, closed_first=closed_first)


# -- the env -----------------------------------------------------------------------------------------------------


class MenuEnv(FoundIsWin, AECEnv[str, np.ndarray, str | None]):
    """The menu as a one-agent PettingZoo AEC env (agent ``player_0``), one free-text answer per episode.

    Observation: int64 ``[menu number, plans, answered (0 or 1)]``; action: any string (``Text`` space), judged by
    ``read_answer``. ``reset(seed=None)`` draws the next seed from the env's own generator.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "arena_menu_v0", "is_parallelizable": False}

    def __init__(self, plans: int = DEFAULT_PLANS, tasks: int = 0, code_length: int = DEFAULT_CODE_LENGTH) -> None:
        super().__init__()
        _check_sizes(plans, code_length)
        if int(tasks) < 0:
            raise ValueError(f"tasks must be 0 (every seed its own menu) or positive, got {tasks}")
        self.plans = int(plans)
        self.tasks = int(tasks)
        self.code_length = int(code_length)
        self.possible_agents = ["player_0"]
        self.agents: list[str] = []
        self.render_mode = None
        top = np.iinfo(np.int64).max
        self._observation_space = spaces.Box(low=0, high=np.array([top, self.plans, 1]), dtype=np.int64)
        self._action_space = spaces.Text(max_length=MAX_ANSWER_CHARS, min_length=0, charset=string.printable)
        self._seed_rng = np.random.default_rng()
        #: This episode's menu, and what was answered (None before the answer).
        self.menu = menu_of(0, self.plans, self.code_length)
        self.text: str | None = None
        self.answer: Answer | None = None
        self.agent_selection = "player_0"
        self.rewards: dict[str, float] = {}
        self._cumulative_rewards: dict[str, float] = {}
        self.terminations: dict[str, bool] = {}
        self.truncations: dict[str, bool] = {}
        self.infos: dict[str, dict[str, Any]] = {}
        self.arena_text_adapter = MenuAdapter()

    @property
    def task(self) -> int:
        return self.menu.task

    @property
    def task_id(self) -> str:
        """The task's id in ``episode_details``: ``"<plans>:<menu number>"`` (like the vault's)."""
        return f"{self.plans}:{self.menu.task}"

    @property
    def plan_right(self) -> bool:
        return self.answer is not None and self.answer.plan == self.menu.paying

    @property
    def code_right(self) -> bool:
        """The code is the chosen plan's code (whether or not that plan pays)."""
        a = self.answer
        return a is not None and a.plan is not None and a.code == self.menu.codes[a.plan]

    @property
    def found(self) -> bool:
        return self.plan_right and self.code_right

    def observation_space(self, agent: str) -> spaces.Box:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Text:
        return self._action_space

    def observe(self, agent: str) -> np.ndarray:
        return np.array([self.menu.task, self.plans, 0 if self.answer is None else 1], dtype=np.int64)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None:
            self._seed_rng = np.random.default_rng(int(seed) % _SEEDS)
        else:
            seed = int(self._seed_rng.integers(1 << 62))
        self.menu = menu_of(task_of(seed, self.tasks), self.plans, self.code_length)
        self.text = None
        self.answer = None
        self.agents = self.possible_agents[:]
        self.agent_selection = "player_0"
        self.rewards = {"player_0": 0.0}
        self._cumulative_rewards = {"player_0": 0.0}
        self.terminations = {"player_0": False}
        self.truncations = {"player_0": False}
        self.infos = {"player_0": {"task_id": self.task_id}}

    def step(self, action: str | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.text = action if isinstance(action, str) else "" if action is None else str(action)
        self.answer = read_answer(self.text, self.menu, self.code_length)
        self._cumulative_rewards[agent] = 0.0
        self.rewards = {agent: 1.0 if self.found else 0.0}
        self.terminations = {agent: True}
        self.truncations = {agent: False}
        self.infos = {agent: {"task_id": self.task_id}}
        self._accumulate_rewards()


def _menu(view: SeatView) -> MenuEnv:
    return env_of(view, MenuEnv)


def _code_clause(env: MenuEnv, plan: int) -> str:
    """What the code was, for a plan that does not pay."""
    code = env.answer.code if env.answer is not None else None
    name = env.menu.names[plan]
    if code is None:
        return "You wrote no code after the strategy."
    if code == env.menu.codes[plan]:
        return f"Your code {code} was plan {name}'s code."
    return f"Your code {code} was not plan {name}'s code ({env.menu.codes[plan]})."


class MenuAdapter:
    """Rules, the listed plans (nothing secret), free-text answers and the summary that says which part failed."""

    def rules(self, view: SeatView) -> str:
        n = _menu(view).plans
        return (
            f"A menu lists {n} plans, each with a name and a code. Exactly one plan pays: choosing it and writing "
            "its exact code scores 1; anything else scores 0. Nothing on the menu says which plan pays. Name the "
            "plan you choose inside <strategy>...</strategy>, then write that plan's code."
        )

    def observation(self, view: SeatView) -> str:
        env = _menu(view)
        lines = [f"- Plan {name}: code {code}" for name, code in zip(env.menu.names, env.menu.codes, strict=True)]
        return f"Menu {env.menu.task}: {env.plans} plans.\n" + "\n".join(lines)

    def legal_moves(self, view: SeatView) -> list[Move]:
        return []

    def answer_format(self, view: SeatView) -> str:
        return "Answer as <strategy>PLAN NAME</strategy> followed by that plan's code."

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        """Always an action (no parse failure; module docstring): the env judges the whole answer."""
        text = answer if isinstance(answer, str) else ""
        return ParseResult(action=text, move=self.action_name(view, text))

    def action_name(self, view: SeatView, action: Any) -> str:
        if not isinstance(action, str):
            return f"action {action!r}"
        env = _menu(view)
        read = read_answer(action, env.menu, env.code_length)
        if not read.closed:
            return "no closed strategy"
        plan = "no plan" if read.plan is None else f"plan {env.menu.names[read.plan]}"
        return f"{plan}, code {read.code or '(none)'}"

    def episode_summary(self, view: SeatView) -> str:
        env = _menu(view)
        a = env.answer
        if a is None:
            return "No answer was given."
        if not a.closed:
            return "Your answer has no closed <strategy>...</strategy>, so it chose no plan (score 0)."
        if not a.named:
            return "Your strategy named none of the listed plans, so it chose no plan (score 0)."
        if a.plan is None:
            several = ", ".join(env.menu.names[i] for i in a.named)
            return f"Your strategy named more than one plan ({several}), so it chose no plan (score 0)."
        name = env.menu.names[a.plan]
        if not env.plan_right:
            return f"Plan {name} failed: it is not the plan that pays (score 0). {_code_clause(env, a.plan)}"
        code = env.menu.paying_code
        if a.code is None:
            return f"Plan {name} is the plan that pays, but you wrote no code after the strategy (score 0)."
        if a.code != code:
            return f"Plan {name} is the plan that pays, but your code {a.code} is not its code {code} (score 0)."
        return f"Plan {name} is the plan that pays and your code {a.code} is its code (score 1)."

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        """``task_id``, ``score``, ``outcome_key`` (the chosen plan's name, ``+code`` when its code was right;
        ``no plan``; ``none`` before an answer: SGE's distinct-outcomes measure counts plans tried), the chosen
        ``plan`` (None when none), ``plan_right``, ``code`` (None when none), ``code_right`` (the chosen plan's own
        code), ``strategy_closed``, ``strategy_closed_first`` and the ``paying`` plan (never shown to the model)."""
        env = _menu(view)
        a = env.answer
        plan = None if a is None or a.plan is None else env.menu.names[a.plan]
        if a is None:
            key = "none"
        elif plan is None:
            key = "no plan"
        else:
            key = plan + ("+code" if env.code_right else "")
        return {
            "task_id": env.task_id,
            "score": 1.0 if env.found else 0.0,
            "outcome_key": key,
            "plan": plan,
            "plan_right": env.plan_right,
            "code": None if a is None else a.code,
            "code_right": env.code_right,
            "strategy_closed": a is not None and a.closed,
            "strategy_closed_first": a is not None and a.closed_first,
            "paying": env.menu.paying_name,
        }


# -- ceilings and analysis ---------------------------------------------------------------------------------------

Number = Fraction | float


def _probability(value: Number, what: str) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"{what} must be a probability in [0, 1], got {value}")


def rollout_success(p_plan: Number, code_accuracy: Number) -> Number:
    """The success of one rollout that picks the paying plan with probability ``p_plan`` and then writes that plan's
    code with probability ``code_accuracy``: their product (exact for Fractions)."""
    _probability(p_plan, "p_plan")
    _probability(code_accuracy, "code_accuracy")
    return p_plan * code_accuracy


def pass_at_k(success: Number, k: int) -> Number:
    """The probability that at least one of ``k`` independent rollouts, each winning with ``success``, wins:
    1 − (1 − success)^k."""
    _probability(success, "success")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return 1 - (1 - success) ** k


def blind_ceiling(tasks: Iterable[int], plans: int = DEFAULT_PLANS) -> Fraction:
    """The best success over ``tasks`` (uniformly) of a policy that has not learnt which plan pays where and so picks
    by a fixed rule: always the same name, or always the same listed position (with the right code). 1/K over whole
    blocks of K menus; a fresh menu's paying plan is uniform given its listing, so there 1/K bounds every policy."""
    menus = [menu_of(t, plans) for t in tasks]
    if not menus:
        raise ValueError("blind_ceiling needs at least one task")
    by_name = np.bincount([PLAN_NAMES.index(m.paying_name) for m in menus], minlength=plans)
    by_position = np.bincount([m.paying for m in menus], minlength=plans)
    return Fraction(int(max(by_name.max(), by_position.max())), len(menus))


def reflection_ceiling(plans: int, failed: int) -> Fraction:
    """The best success of a rollout of a recurring menu that knows ``failed`` distinct plans failed there (its
    strategy reflection rules them out) and nothing else: uniform over the other K − j plans, 1/(K − j)."""
    if not 0 <= failed < plans:
        raise ValueError(f"failed must be in [0, plans - 1], got {failed} with {plans} plans")
    return Fraction(1, plans - failed)


def sge_draw_ceiling(
    plans: int = DEFAULT_PLANS,
    p_negative: Number = Fraction(1, 4),
    p_positive: Number = Fraction(1, 10),
    successes: bool = False,
) -> Number:
    """The best success of an SGE training rollout of a menu met before, whose failed buffer holds failures of wrong
    plans (and, with ``successes``, whose successful buffer is not empty), under SGE's draw (``draw_reflection``):
    with ``p_negative`` one failed sequence is shown (one plan ruled out: 1/(K − 1)); with ``p_positive`` a
    successful one, which names the paying plan (1), or nothing when that buffer is empty; else no reflection
    (1/K). A failure of the paying plan with a wrong code would name it too: this is the ceiling when none did."""
    _probability(p_negative, "p_negative")
    _probability(p_positive, "p_positive")
    positive = p_positive if successes else 0
    none = 1 - p_negative - positive
    return none * Fraction(1, plans) + p_negative * reflection_ceiling(plans, 1) + positive


def tempered(probs: Sequence[float], temperature: float) -> list[float]:
    """The distribution over options whose probabilities are ``probs`` at temperature 1, sampled at ``temperature``:
    softmax(log p / T), i.e. p^(1/T) renormalised."""
    if temperature <= 0:
        raise ValueError(f"temperature must be positive, got {temperature}")
    if any(p < 0 for p in probs) or not math.isclose(sum(probs), 1.0, abs_tol=1e-9):
        raise ValueError(f"probs must be a distribution, got {list(probs)}")
    logs = [math.log(p) / temperature if p > 0 else -math.inf for p in probs]
    top = max(logs)
    weights = [math.exp(x - top) for x in logs]
    total = sum(weights)
    return [w / total for w in weights]


def plan_probability(p: float, temperature: float, plans: int = DEFAULT_PLANS) -> float:
    """The paying plan's probability at ``temperature`` when it is ``p`` at T = 1 and the other K − 1 plans share
    1 − p equally."""
    _probability(p, "p")
    rest = (1 - p) / (plans - 1)
    return tempered([p, *[rest] * (plans - 1)], temperature)[0]


#: The issue's worked example (issue 26, SGE): as stated, and the success per rollout under readings that follow.
ISSUE_P_PLAN = 0.02
ISSUE_ACCURACY = {0.7: 0.9, 1.2: 0.75}
ISSUE_CLAIMED = {"grpo": 0.0033, "all_hot": 0.010, "sge": 0.022}


def worked_example(p_plan: float = ISSUE_P_PLAN, plans: int = DEFAULT_PLANS) -> dict[str, dict[str, float]]:
    """Per reading of "P(plan) 0.02", the per-rollout success of GRPO (all at 0.7), all-hot (all at 1.2) and SGE
    (strategy at 1.2, code at 0.7), with code accuracy 0.9 at 0.7 and 0.75 at 1.2 (module docstring):

    * ``constant``: P(plan) the same at every temperature;
    * ``rare``: 0.02 at T = 1 tempered as a rare option, P_T = p^(1/T);
    * ``uniform_rest``: 0.02 at T = 1, the other K − 1 plans sharing the rest (``plan_probability``);
    * ``issue``: the issue's own numbers; ``issue_implied``: the P(plan) each of them implies (GRPO's at 0.7,
      all-hot's and SGE's at 1.2: different, which is the inconsistency).

    Each row also has ``p_cool`` and ``p_hot`` (P(plan) at 0.7 and 1.2) where defined."""
    cool, hot = ISSUE_ACCURACY[0.7], ISSUE_ACCURACY[1.2]

    def row(p_cool: float, p_hot: float) -> dict[str, float]:
        return {
            "p_cool": p_cool,
            "p_hot": p_hot,
            "grpo": float(rollout_success(p_cool, cool)),
            "all_hot": float(rollout_success(p_hot, hot)),
            "sge": float(rollout_success(p_hot, cool)),
        }

    implied = {
        "grpo": ISSUE_CLAIMED["grpo"] / cool,
        "all_hot": ISSUE_CLAIMED["all_hot"] / hot,
        "sge": ISSUE_CLAIMED["sge"] / cool,
    }
    return {
        "constant": row(p_plan, p_plan),
        "rare": row(p_plan ** (1 / 0.7), p_plan ** (1 / 1.2)),
        "uniform_rest": row(plan_probability(p_plan, 0.7, plans), plan_probability(p_plan, 1.2, plans)),
        "issue": dict(ISSUE_CLAIMED),
        "issue_implied": implied,
    }


def ceilings_table(plans: int = DEFAULT_PLANS, pool: int = 20, group: int = 8) -> str:
    """Markdown: the ceilings of docs/testbeds.md, section 5, for ``plans`` plans and ``task_pool`` ``pool``."""
    k = plans
    lines = [
        f"plans {k}, task_pool {pool}, groups of {group}",
        "",
        "| success per rollout (a perfect code) | ceiling |",
        "| --- | --- |",
        f"| without knowing the paying plan (a fresh menu; or a fixed name or position over menus 0..{pool - 1}) | "
        f"1/{k} = {float(blind_ceiling(range(pool), k)):.4f} |",
    ]
    for j in range(1, k):
        lines.append(
            f"| strategy reflection ruling out {j} failed plan{'s' if j > 1 else ''} | "
            f"1/{k - j} = {float(reflection_ceiling(k, j)):.4f} |"
        )
    lines += [
        f"| SGE's draw on a menu met before (failures only; p_negative 0.25) | {float(sge_draw_ceiling(k)):.4f} |",
        f"| SGE's draw with a success stored too (p_positive 0.1) | {float(sge_draw_ceiling(k, successes=True)):.4f} |",
        f"| a blind rollout repeats a given failed plan | 1/{k} = {1 / k:.4f} |",
        f"| a group of {group} blind rollouts has a win: 1 − (1 − 1/{k})^{group} | "
        f"{float(pass_at_k(Fraction(1, k), group)):.4f} |",
        "",
        "| worked example (P(plan) 0.02; code 0.9 at T 0.7, 0.75 at T 1.2) | GRPO | all-hot | SGE | "
        f"GRPO pass@{group} | SGE pass@{group} |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in worked_example(plans=plans).items():
        if name == "issue_implied":
            continue
        lines.append(
            f"| {name} | {r['grpo']:.5f} | {r['all_hot']:.5f} | {r['sge']:.5f} | "
            f"{float(pass_at_k(r['grpo'], group)):.4f} | {float(pass_at_k(r['sge'], group)):.4f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(ceilings_table())
