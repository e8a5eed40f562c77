"""Logs go to the stderr of the moment, so swapping it (pytest, notebooks) never breaks logging."""

from __future__ import annotations

import io
import json
import re
import sys

import pytest
import structlog

from arena.core.cli.logs import configure_logging


def test_logs_follow_sys_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    configure_logging("json")
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    structlog.get_logger("t").info("one", n=1)
    first.close()  # a closed earlier stream must not matter
    monkeypatch.setattr(sys, "stderr", second)
    structlog.get_logger("t").info("two", n=2)
    line = json.loads(second.getvalue().strip())
    assert line["event"] == "two" and line["n"] == 2 and line["level"] == "info"


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_readable_lines_and_a_pipe_json(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    configure_logging("auto")
    structlog.get_logger("t").info("population: snapshots joined the pool", members=["agent@it2"])
    text = terminal.getvalue()
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)  # colours on a terminal
    assert re.fullmatch(
        r"\d\d:\d\d:\d\d \[info\] population: snapshots joined the pool members=\['agent@it2'\]\n", plain
    )
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    configure_logging("auto")
    structlog.get_logger("t").info("two", n=2)
    line = json.loads(pipe.getvalue())
    assert line["event"] == "two" and line["n"] == 2 and line["timestamp"].endswith("Z")
    # Forced: readable into a pipe (no colour codes there), JSON onto a terminal.
    configure_logging("pretty")
    structlog.get_logger("t").info("three")
    assert "\x1b[" not in pipe.getvalue() and pipe.getvalue().splitlines()[-1].endswith("[info] three")


def test_readable_lines_land_above_a_progress_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    from tqdm import tqdm

    terminal = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    configure_logging("pretty")
    bar = tqdm(total=10, desc="iterations", file=sys.stderr, disable=False)
    bar.update(3)
    structlog.get_logger("t").info("a line mid-bar")
    bar.close()
    out = re.sub(r"\x1b\[[0-9;]*m", "", terminal.getvalue())
    line = next(part for part in re.split(r"[\r\n]", out) if "a line mid-bar" in part)
    assert "iterations" not in line  # the bar was cleared first, not written into
    assert out.count("iterations") >= 2  # drawn before, redrawn after
