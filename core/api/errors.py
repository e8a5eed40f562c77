"""Errors a user can cause, and how they are worded.

Every ``ArenaError`` is printed by the CLI as one line (no traceback) and ends the command with exit code 2.
Raise it for anything a user can fix: an unknown name, a bad config value, a plugin that does not fit.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ArenaError(Exception):
    """A problem the user can fix; the message is the whole explanation."""


class UnknownNameError(ArenaError, KeyError):
    """An arena, opponent, plugin, backend or model name that nobody registered."""

    def __init__(self, kind: str, name: str, available: Iterable[str]) -> None:
        self.kind = kind
        self.name = name
        self.available = sorted(available)
        super().__init__(unknown_name_message(kind, name, self.available))

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class PluginError(ArenaError):
    """A plugin that cannot be loaded or does not fit the hook specifications."""


class ConfigError(ArenaError):
    """A config file or override that does not validate."""


def unknown_name_message(kind: str, name: str, available: Iterable[str]) -> str:
    """``unknown arena 'kuhn' (did you mean 'kuhn_poker'?); available: a, b, c``."""
    names = sorted(available)
    # Prefixes first ("kuhn" -> "kuhn_poker"), then spelling neighbours ("reflektion" -> "reflection").
    prefixed = [n for n in names if name and n.startswith(name)]
    close = list(dict.fromkeys(prefixed + difflib.get_close_matches(name, names, n=3, cutoff=0.6)))[:3]
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    listing = ", ".join(names) if names else "none registered"
    return f"unknown {kind} {name!r}{hint}; available: {listing}"
