"""structlog, configured once by the CLI: pretty on a terminal, JSON lines otherwise, always on stderr."""

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


def configure_logging(fmt: LogFormat = "auto", level: int = logging.INFO) -> None:
    pretty = sys.stderr.isatty() if fmt == "auto" else fmt == "pretty"
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()) if pretty else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.StackInfoRenderer(),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=False,
    )
