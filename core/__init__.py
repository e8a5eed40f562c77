"""Public API for plugin authors: ``from arena.core import hookimpl, ...``."""

from arena.core.errors import ArenaError, ConfigError, PluginError, UnknownNameError
from arena.core.markers import hookimpl

__all__ = ["ArenaError", "ConfigError", "PluginError", "UnknownNameError", "hookimpl"]
