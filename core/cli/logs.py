"""structlog, configured once by the CLI: readable lines on a terminal, JSON lines otherwise, always on stderr.

``--log-format auto`` (the default) picks by where stderr goes: a terminal gets one short human-readable line per
event (``12:03:04 info  population: snapshots joined the pool  members=['agent@it2']``, coloured), a file or a
pipe gets JSON lines with an ISO UTC timestamp (``{"event": ..., "level": ..., "timestamp": ..., ...}``) for
tools. ``pretty`` and ``json`` force one. Readable lines are written through ``tqdm.write``, so a log line
printed while a progress bar runs (building ``tiny``, iterations, evaluation) lands above the bar instead of
breaking it.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["auto", "pretty", "json"]


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of the write, not at configuration time.

    Test runners and notebooks swap ``sys.stderr``; a logger bound to an old stream would write to a closed file.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


class _AboveProgressBars(_CurrentStderr):
    """``_CurrentStderr`` through ``tqdm.write``: open bars are cleared, the line printed, the bars redrawn."""

    def write(self, text: str) -> int:
        from tqdm import tqdm

        if text.strip():
            tqdm.write(text.rstrip("\n"), file=sys.stderr)
        return len(text)


def is_terminal(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


def configure_logging(fmt: LogFormat = "auto", level: int = logging.INFO) -> None:
    terminal = is_terminal(sys.stderr)
    pretty = terminal if fmt == "auto" else fmt == "pretty"
    processors: list[structlog.typing.Processor] = [structlog.processors.add_log_level]
    if pretty:
        processors += [
            structlog.processors.TimeStamper(fmt="%H:%M:%S", utc=False),
            structlog.processors.StackInfoRenderer(),
            structlog.dev.ConsoleRenderer(colors=terminal, pad_event_to=0, pad_level=False),
        ]
    else:
        processors += [
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            structlog.processors.JSONRenderer(),
        ]
    stream = _AboveProgressBars() if pretty else _CurrentStderr()
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
