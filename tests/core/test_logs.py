"""Logs go to the stderr of the moment, so swapping it (pytest, notebooks) never breaks logging."""

from __future__ import annotations

import io
import json
import sys

import pytest
import structlog

from arena.core.logs import configure_logging


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
