"""The ``coding`` arena: write a Python function to a spec; hidden unit tests decide the reward.

One agent (``player_0``) per episode gets one task of ``arena.arenas.coding_tasks`` and answers with code (the
action is a ``str``). The code runs once per attempt in the sandbox (``arena.arenas.sandbox``) under a harness that
calls the function on every hidden test's arguments, each with its own time limit and ``try``/``except``, and
prints the results as JSON lines. Expected values never enter the sandbox: the harness reports what the function
returned (as ``repr`` of plain Python values) and this process compares, so code cannot read the answers.

Reward: the fraction of hidden tests passed by the last attempt, given when the episode ends (after a full pass
or after ``max_attempts`` attempts; earlier attempts get 0 and their feedback goes into the next observation).
``arena_outcome`` is ``"win"`` only when every test passed.

``reset(seed=s)`` picks ``tasks[s % len(tasks)]`` of the chosen split and tiers (in ``coding_tasks`` order), so a
trial's seed is its task; ``options={"task_id": ...}`` picks a task by id; with no seed a fixed-seed RNG picks.

``suite="humaneval"`` plays HumanEval's 164 problems instead (``arena.arenas.humaneval``): each is scored 0 or 1 by
its own ``check()``, which runs inside the sandbox with the answer, so there the expected values do enter it.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import attrs
import structlog

from arena.arenas.coding_tasks import CodingTask, TestCase, tasks_for
from arena.arenas.humaneval import HARNESS as HUMANEVAL_HARNESS
from arena.arenas.humaneval import SUITES, HumanEvalTask, humaneval_tasks, read_verdict, unit_input
from arena.arenas.sandbox import PLAIN_VALUES, SandboxResult, describe_isolation, launch_mode, run_batch
from arena.arenas.single_task import SingleTaskTextEnv
from arena.core.api.arena import Move, ParseResult, SeatView
from arena.core.api.errors import ArenaError

__all__ = [
    "CheckResult",
    "CodingAdapter",
    "CodingEnv",
    "TestOutcome",
    "check_solution",
    "check_solutions",
    "extract_code",
]

MAX_CODE_CHARS = 4000
FEEDBACK_CHARS = 1500
MAX_FAILURES_SHOWN = 3
_REPR_LIMIT = 2000

# Runs inside the sandbox, one sandboxed process per unit. stdin: {"code", "name", "args": [repr of each test's
# args tuple], "per_test_s"}. fd 3 (the sandbox's result channel, not stdout): one line per test, the ``repr`` of
# (test, "got", repr of the value) or (test, "error", message, traceback), or (-1, "load_error", message,
# traceback) when the code does not load. All the harness needs once the solution is loaded is bound before it
# runs, in a namespace the solution cannot reach through sys.modules (its builtins are a private copy), and only
# plain built-in values are serialised, copied through the built-in types' own methods, so neither patched modules
# nor a returned object's __repr__/__eq__ change what is reported. The solution can still write to fd 3 itself:
# that is worth no more than returning those values, and it reaches only its own unit's result.
HARNESS = (
    r"""
import builtins, json, sys
_CORE = r'''
import ast, io, linecache, os, signal, traceback

_write, _literal, _setitimer, _ITIMER = os.write, ast.literal_eval, signal.setitimer, signal.ITIMER_REAL


class TestTimeout(BaseException):
    pass


class NotPlain(Exception):
    pass


def _alarm(signum, frame):
    raise TestTimeout()


signal.signal(signal.SIGALRM, _alarm)


class _Sink(io.TextIOBase):
    def writable(self):
        return True

    def write(self, s):
        return len(s)


def emit(*record):
    _write(3, (repr(record) + "\n").encode("utf-8", "replace"))


"""
    + PLAIN_VALUES
    + r"""

def describe(exc, per_test):
    if isinstance(exc, TestTimeout):
        return f"timed out after {per_test:.2g} s"
    try:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except BaseException:
        text = type(exc).__name__
    return text[:300]


def trace(exc):
    if isinstance(exc, (TestTimeout, NotPlain)):
        return None
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
        frames = [f for f in te.stack if f.filename == "solution.py"]
        te.stack = traceback.StackSummary.from_list(frames[-4:])
        return "".join(te.format(chain=False))[-1200:]
    except BaseException:
        return None


def main(unit, out, modules):
    code, name, per_test = unit["code"], unit["name"], float(unit["per_test_s"])
    calls = [_literal(a) for a in unit["args"]]
    linecache.cache["solution.py"] = (len(code), None, code.splitlines(True), "solution.py")
    namespace = {"__name__": "solution", "__builtins__": modules["builtins"]}
    try:
        try:
            modules["sys"].stdout = _Sink()
            _setitimer(_ITIMER, per_test)
            exec(compile(code, "solution.py", "exec"), namespace)
        finally:
            _setitimer(_ITIMER, 0)
        function = namespace.get(name)
        if not callable(function):
            emit(-1, "load_error", f"no function named {name} is defined", None)
            return
    except BaseException as exc:
        emit(-1, "load_error", describe(exc, per_test), trace(exc))
        return
    for t, args in enumerate(calls):
        try:
            try:
                _setitimer(_ITIMER, per_test)
                got = repr(plain(function(*args)))[:LIMIT]
            finally:
                _setitimer(_ITIMER, 0)
            emit(t, "got", got)
        except BaseException as exc:
            emit(t, "error", describe(exc, per_test), trace(exc))
'''
_scope = {"__builtins__": dict(vars(builtins)), "__name__": "arena_harness", "LIMIT": %(limit)d}
exec(_CORE, _scope)
_main, _unit = _scope["main"], json.loads(sys.stdin.read())
del _scope
_main(_unit, sys.stdout, {"builtins": builtins, "sys": sys})
""".replace("%(limit)d", str(_REPR_LIMIT))
)


@attrs.frozen
class TestOutcome:
    """One hidden test after a run: ``got`` is the returned value's repr, ``error`` the exception (or why it did
    not run)."""

    __test__ = False

    index: int
    passed: bool
    call: str
    expected: str
    got: str | None = None
    error: str | None = None
    traceback: str | None = None


@attrs.frozen
class CheckResult:
    """The verdict on one piece of code for one task."""

    task_id: str
    name: str
    outcomes: tuple[TestOutcome, ...]
    load_error: str | None = None
    load_traceback: str | None = None
    stopped: str | None = None  # the sandbox's killed_reason when the run ended before every test reported
    sandbox: SandboxResult | None = attrs.field(default=None, repr=False)

    @property
    def total(self) -> int:
        return len(self.outcomes)

    @property
    def passed(self) -> tuple[int, ...]:
        return tuple(o.index for o in self.outcomes if o.passed)

    @property
    def score(self) -> float:
        return len(self.passed) / self.total if self.total else 0.0

    @property
    def all_passed(self) -> bool:
        return bool(self.outcomes) and len(self.passed) == self.total

    def feedback(self, limit: int = FEEDBACK_CHARS) -> str:
        """What the environment tells the model: the count, the failing tests, the last traceback."""
        if self.all_passed:
            return f"All {self.total} hidden test{'s' if self.total != 1 else ''} passed."
        lines = [f"Passed {len(self.passed)} of {self.total} tests."]
        last_trace = self.load_traceback
        if self.load_error is not None:
            lines.append(f"Your code could not be used: {self.load_error}.")
        else:
            failing = [o for o in self.outcomes if not o.passed]
            if self.stopped is not None:
                lines.append(f"The run was stopped ({_STOPPED.get(self.stopped, self.stopped)}).")
            lines.append("Failing tests:")
            previous = None
            for o in failing[:MAX_FAILURES_SHOWN]:
                verdict = f"got {o.got}" if o.error is None else "the same error" if o.error == previous else o.error
                previous = o.error
                lines.append(f"- {o.call}: expected {o.expected}, {verdict}")
            if len(failing) > MAX_FAILURES_SHOWN:
                lines.append(f"- ... and {len(failing) - MAX_FAILURES_SHOWN} more")
            last_trace = next((o.traceback for o in reversed(failing) if o.traceback), None)
        if last_trace:
            lines.append("Last traceback:\n" + last_trace.rstrip())
        text = "\n".join(lines)
        return text if len(text) <= limit else text[: limit - 3] + "..."


_STOPPED = {
    "timeout": "time limit",
    "cpu": "CPU limit",
    "memory": "memory limit",
    "blocked": "a forbidden operation",
}


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def same_value(got: Any, expected: Any) -> bool:
    """Equal and of the same types all the way down (True is not 1, a tuple is not a list); floats approximately."""
    if type(got) is not type(expected):
        return False
    if isinstance(expected, float):
        return math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(expected, (list, tuple)):
        return len(got) == len(expected) and all(same_value(g, e) for g, e in zip(got, expected, strict=True))
    if isinstance(expected, dict):
        return got.keys() == expected.keys() and all(same_value(got[k], expected[k]) for k in expected)
    return bool(got == expected)


def _judge(task: CodingTask, index: int, case: TestCase, record: Mapping[str, Any] | None, missing: str) -> TestOutcome:
    call, expected = _shorten(case.call(task.name)), _shorten(repr(case.expected))
    if record is None:
        return TestOutcome(index, False, call, expected, error=missing)
    if "error" in record:
        return TestOutcome(index, False, call, expected, error=str(record["error"]), traceback=record.get("traceback"))
    got_text = str(record.get("got", ""))
    try:
        got = ast.literal_eval(got_text)
        passed = same_value(got, case.expected)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        passed = False
    return TestOutcome(index, passed, call, expected, got=_shorten(got_text))


def _records(channel: str) -> tuple[dict[int, tuple[Any, ...]], tuple[Any, ...] | None]:
    """The harness's records from the result channel: per test the first one, and the load error if any."""
    tests: dict[int, tuple[Any, ...]] = {}
    load: tuple[Any, ...] | None = None
    for line in channel.splitlines():
        try:
            record = ast.literal_eval(line)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(record, tuple) or len(record) < 3 or type(record[0]) is not int:
            continue
        if record[0] == -1 and record[1] == "load_error" and load is None:
            load = record
        elif record[0] >= 0 and record[1] in ("got", "error"):
            tests.setdefault(record[0], record)
    return tests, load


def _as_dict(record: tuple[Any, ...] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    if record[1] == "got":
        return {"got": record[2]}
    return {"error": record[2], "traceback": record[3] if len(record) > 3 else None}


def check_solutions(
    items: Sequence[tuple[CodingTask, str]],
    *,
    timeout_s: float | None = None,
    per_test_s: float | None = None,
    memory_mb: int = 512,
) -> list[CheckResult]:
    """Run every ``(task, code)`` pair's hidden tests, each pair in its own sandboxed process (all of them in one
    sandbox where the launcher allows it), and judge them here.

    ``per_test_s`` (default: 80 % of ``timeout_s`` shared by the pair's tests and its loading, at least 0.2 s)
    bounds each call and the code's loading; ``timeout_s`` (default 5 s, or enough for every test's limit) bounds
    each pair's run. One pair cannot change another's result: they run in separate processes, one after the
    other, with nothing of the earlier ones left (see ``arena.arenas.sandbox``).
    """
    most = max((len(task.tests) for task, _ in items if not isinstance(task, HumanEvalTask)), default=1) or 1
    if timeout_s is None:
        timeout_s = 5.0 if per_test_s is None else 2.0 + per_test_s * (most + 1)
    if per_test_s is None:
        per_test_s = max(0.2, 0.8 * timeout_s / (most + 1))
    programs: list[tuple[str, str]] = []
    tokens: list[str] = []
    for task, code in items:
        if isinstance(task, HumanEvalTask):
            unit, token = unit_input(task, code, max(0.2, 0.8 * timeout_s))
            programs.append((HUMANEVAL_HARNESS, unit))
            tokens.append(token)
            continue
        args = [repr(c.args) for c in task.tests]
        programs.append(
            (HARNESS, json.dumps({"code": code, "name": task.name, "args": args, "per_test_s": per_test_s}))
        )
        tokens.append("")
    results = run_batch(programs, timeout_s=timeout_s, cpu_s=math.ceil(timeout_s) + 1, memory_mb=memory_mb)
    checks = []
    for (task, _), result, token in zip(items, results, tokens, strict=True):
        if isinstance(task, HumanEvalTask):
            checks.append(_humaneval_result(task, result, token))
            continue
        tests, load = _records(result.channel)
        stopped = None
        if load is None and any(t not in tests for t in range(len(task.tests))):
            stopped = result.killed_reason or "exit"
        missing = f"did not run: the run stopped ({_STOPPED.get(stopped or '', stopped)})"
        if result.stderr.strip() and stopped == "exit":
            missing = f"did not run: the harness failed ({_shorten(result.stderr.strip().splitlines()[-1])})"
        unfinished = next((t for t in range(len(task.tests)) if t not in tests), None)
        outcomes = tuple(
            _judge(
                task,
                t,
                case,
                None if load is not None else _as_dict(tests.get(t)),
                missing.replace("did not run", "did not finish") if t == unfinished else missing,
            )
            for t, case in enumerate(task.tests)
        )
        load_error = None if load is None else str(load[2])
        if load_error is not None:
            outcomes = tuple(attrs.evolve(o, error=load_error) for o in outcomes)
        checks.append(
            CheckResult(
                task_id=task.task_id,
                name=task.name,
                outcomes=outcomes,
                load_error=load_error,
                load_traceback=None if load is None or len(load) < 4 else load[3],
                stopped=stopped,
                sandbox=result,
            )
        )
    return checks


def _humaneval_result(task: HumanEvalTask, result: SandboxResult, token: str) -> CheckResult:
    """One outcome, ``check(name)``: passed only when HumanEval's check returned and the harness said so with this
    run's token."""
    verdict = read_verdict(result.channel, token)
    call, expected = f"check({task.name})", "every assert of HumanEval's check to hold"
    stopped = None
    if verdict.status is None:
        stopped = result.killed_reason or "exit"
        error = f"did not finish: the run stopped ({_STOPPED.get(stopped, stopped)})"
        if result.stderr.strip() and stopped == "exit":
            error = f"did not finish: the harness failed ({_shorten(result.stderr.strip().splitlines()[-1])})"
        outcome = TestOutcome(0, False, call, expected, error=error)
    elif verdict.status == "passed":
        outcome = TestOutcome(0, True, call, expected, got="passed")
    else:
        outcome = TestOutcome(0, False, call, expected, error=verdict.message, traceback=verdict.traceback)
    load = verdict.status == "load_error"
    return CheckResult(
        task_id=task.task_id,
        name=task.name,
        outcomes=(outcome,),
        load_error=verdict.message if load else None,
        load_traceback=verdict.traceback if load else None,
        stopped=stopped,
        sandbox=result,
    )


def check_solution(task: CodingTask, code: str, *, timeout_s: float = 5.0, memory_mb: int = 512) -> CheckResult:
    """Judge one piece of code against one task's hidden tests (one sandbox run)."""
    return check_solutions([(task, code)], timeout_s=timeout_s, memory_mb=memory_mb)[0]


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_DEF = re.compile(r"^[ \t]*(?:async[ \t]+)?def[ \t]", re.MULTILINE)
_IMPORT = re.compile(r"^(?:import[ \t]+[\w.]+|from[ \t]+[\w.]+[ \t]+import[ \t]).*$")


def extract_code(answer: str, function: str | None = None) -> str:
    """The code in a model's answer: the last ```python block (else the last ``` block) that defines ``function``,
    else the last ```python block, else the last ``` block, else everything from the first ``def`` (or ``import``
    before it), else the answer itself (so the tests fail and the feedback says why).

    Small models often follow a correct solution with a second block of usage (``assert f(2) == 4``); taking the
    block that defines the asked-for function scores the solution, not the demo.
    """
    if not isinstance(answer, str):
        return ""
    blocks = [(m.group(1).lower(), m.group(2)) for m in _FENCE.finditer(answer)]
    python = [body for lang, body in blocks if lang in ("python", "py", "python3")]
    candidates = python or [body for _, body in blocks]
    if function:
        defining = re.compile(rf"^\s*(async\s+)?def\s+{re.escape(function)}\s*\(", re.MULTILINE)
        chosen = [body for body in candidates if defining.search(body)]
        if chosen:
            return chosen[-1].strip("\n")
    if candidates:
        return candidates[-1].strip("\n")
    match = _DEF.search(answer)
    if match is None:
        return answer.strip()
    # Keep the import lines right above the first def (blank lines between them allowed).
    head = answer[: match.start()].split("\n")[:-1]
    start = len(head)
    for i in range(len(head) - 1, -1, -1):
        if _IMPORT.match(head[i]):
            start = i
        elif head[i].strip():
            break
    return "\n".join([*head[start:], answer[match.start() :]]).strip()


UNSAFE_ENV = "ARENA_UNSAFE_SANDBOX"


class SandboxUnavailableError(ArenaError):
    """The machine cannot isolate model code (no bubblewrap) and nobody opted in to running it anyway."""


_announced: set[str] = set()


def require_sandbox(unsafe: bool = False) -> str:
    """Check that model code will run under OS isolation (or that the user opted out with ``unsafe_sandbox=True``
    or ``ARENA_UNSAFE_SANDBOX=1``), log once per process which isolation it gets, and return that line."""
    mode = launch_mode()
    line = describe_isolation(mode)
    if not mode.contained and not (unsafe or os.environ.get(UNSAFE_ENV, "") not in ("", "0")):
        raise SandboxUnavailableError(
            f"the coding arena runs model code only under OS isolation and got {mode.isolation!r}: install "
            f"bubblewrap (apt-get install -y bubblewrap) or opt in with arena_kwargs unsafe_sandbox=true or "
            f"{UNSAFE_ENV}=1"
        )
    if line not in _announced:
        _announced.add(line)
        structlog.get_logger("arena.sandbox").info(line)
    return line


class CodingEnv(SingleTaskTextEnv[CodingTask]):
    """Single-agent coding tasks (see the module docstring). The observation is ``[task index, attempts left]``;
    the text the model reads comes from the adapter (``env.unwrapped.arena_text_adapter``)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "name": "arena_coding_v0", "is_parallelizable": False}

    def __init__(
        self,
        split: str | None = None,
        tiers: Iterable[int] | None = None,
        max_attempts: int = 1,
        timeout_s: float = 5.0,
        memory_mb: int = 512,
        unsafe_sandbox: bool = False,
        suite: str = "generated",
    ) -> None:
        if suite not in SUITES:
            raise ValueError(f"unknown coding suite {suite!r}: choose one of {', '.join(map(repr, SUITES))}")
        if suite == "humaneval" and (split not in (None, "test", "all") or tiers is not None):
            raise ValueError(
                f"the humaneval suite has no train split and no tiers (its 164 problems are one evaluation set), got "
                f"split={split!r}, tiers={tiers!r}: leave both out (or null; split 'test' or 'all' also means all 164)"
            )
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.sandbox = require_sandbox(unsafe_sandbox)
        self.suite = suite
        self.split = ("train" if split is None else split) if suite == "generated" else "all"
        self.tiers = None if tiers is None else tuple(int(t) for t in ([tiers] if isinstance(tiers, int) else tiers))
        self.max_attempts = int(max_attempts)
        self.timeout_s = float(timeout_s)
        self.memory_mb = int(memory_mb)
        self.results: list[CheckResult] = []
        self.submissions: list[str] = []
        tasks: Sequence[CodingTask] = humaneval_tasks() if suite == "humaneval" else tasks_for(self.split, self.tiers)
        super().__init__(
            tasks,
            counter_high=self.max_attempts,
            max_text=MAX_CODE_CHARS,
            adapter=CodingAdapter(),
            no_tasks=f"no coding tasks in {self._task_list_name()}",
        )

    @property
    def attempts_left(self) -> int:
        return self.max_attempts - len(self.results)

    def _counter(self) -> int:
        return self.attempts_left

    def _task_list_name(self) -> str:
        if self.suite == "humaneval":
            return "the humaneval suite"
        return f"split {self.split!r} with tiers {self.tiers}"

    def _start_task(self) -> None:
        self.results = []
        self.submissions = []

    def _answer(self, text: str) -> tuple[float, bool, dict[str, Any]]:
        """Run the code against the hidden tests; the score is the reward once the episode ends (all passed, or
        no attempts left), 0 before."""
        result = check_solution(self.task, text, timeout_s=self.timeout_s, memory_mb=self.memory_mb)
        self.submissions.append(text)
        self.results.append(result)
        done = result.all_passed or self.attempts_left <= 0
        info = {
            "task_id": self.task.task_id,
            "tier": self.task.tier,
            "attempt": len(self.results),
            "score": result.score,
            "passed": list(result.passed),
        }
        return (result.score if done else 0.0), done, info

    def arena_outcome(self, returns: Mapping[str, float], agent: str) -> str:
        """A win only when the last attempt passed every hidden test (a return of 1.0)."""
        return "win" if self.results and self.results[-1].all_passed else "loss"


def _env(view: SeatView) -> CodingEnv:
    env = getattr(view.env, "unwrapped", view.env)
    if not isinstance(env, CodingEnv):
        raise TypeError(f"the coding adapter needs a CodingEnv, got {type(env).__name__}")
    return env


class CodingAdapter:
    """Text for the coding arena: the task as the observation, code answers, test feedback as the summary."""

    def rules(self, view: SeatView) -> str:
        env = _env(view)
        tries = "one attempt" if env.max_attempts == 1 else f"up to {env.max_attempts} attempts"
        if env.suite == "humaneval":
            return (
                "Write the Python function that the docstring describes. Hidden tests (HumanEval's check) call it; "
                f"your score is 1 if all of them pass, else 0. You have {tries}. Use only the standard library; do "
                "not read input or files."
            )
        return (
            "Write a Python function that meets the specification. Hidden unit tests call it; your score is the "
            f"fraction of tests passed. You have {tries}. Use only the standard library; do not read input or files."
        )

    def observation(self, view: SeatView) -> str:
        env = _env(view)
        text = env.task.prompt()
        if env.results:
            text += (
                f"\n\nYour attempt {len(env.results)} of {env.max_attempts}: {env.results[-1].feedback()}"
                f"\nFix the function. Attempts left: {env.attempts_left}."
            )
        return text

    def legal_moves(self, view: SeatView) -> list[Move]:
        return []

    def action_name(self, view: SeatView, action: Any) -> str:
        if isinstance(action, str):
            lines = action.count("\n") + 1 if action.strip() else 0
            return f"code ({lines} line{'s' if lines != 1 else ''})"
        return f"action {action!r}"

    def episode_summary(self, view: SeatView) -> str:
        env = _env(view)
        if not env.results:
            return "No code was submitted."
        return env.results[-1].feedback()

    def answer_format(self, view: SeatView) -> str:
        return "Write the complete function in one ```python code block."

    def parse_answer(self, view: SeatView, answer: str) -> ParseResult:
        """Always an action: code that cannot run fails the tests, and the feedback says why."""
        try:
            code = extract_code(answer, _env(view).task.name)
        except Exception:  # defensive: a parser bug must not crash a rollout
            code = answer if isinstance(answer, str) else ""
        return ParseResult(action=code, move=self.action_name(view, code))

    def episode_details(self, view: SeatView) -> dict[str, Any]:
        """Facts for trainer-side plugins (never shown to the model): besides the ids and counts, ``task_text`` (the
        task as shown), one rubric per hidden test (``add(2, 3) == 5`` and whether the last attempt passed it) and
        ``critique`` (the feedback, as ``episode_summary``)."""
        env = _env(view)
        result = env.results[-1] if env.results else None
        passed = list(result.passed) if result else []
        return {
            "task_id": env.task.task_id,
            "tier": env.task.tier,
            "family": env.task.family,
            "passed": passed,
            "total": len(result.outcomes) if result else len(_rubric_calls(env.task)),
            "score": result.score if result else 0.0,
            "attempts": len(env.results),
            "outcome_key": ",".join(str(i) for i in passed),
            "task_text": env.task.prompt(),
            "rubrics": [
                {"description": description, "satisfied": i in passed}
                for i, description in enumerate(_rubric_calls(env.task))
            ],
            "critique": self.episode_summary(view),
        }


def _rubric_calls(task: CodingTask) -> list[str]:
    """One line per hidden test: ``add(2, 3) == 5``, or HumanEval's whole check as one."""
    if isinstance(task, HumanEvalTask):
        return [f"HumanEval's check({task.name}) passes"]
    return [f"{case.call(task.name)} == {case.expected!r}" for case in task.tests]
