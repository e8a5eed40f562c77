"""The protocol of a plugin that keeps state across iterations (buffers, memories, baselines).

A plugin published as a class (the entry point names the class, ``sge = "arena.plugins.sge:SGE"``) gets one
fresh instance per learner (``arena.core.host.plugins.PluginSet``); if it also has these two methods, the run
saves ``state_dict()`` in every checkpoint and gives it back through ``load_state_dict`` on ``--resume`` and to
``arena eval``. The state must be JSON data (it goes into the checkpoint's ``state.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class StatefulPlugin(Protocol):
    """A plugin instance whose state survives checkpoints."""

    def state_dict(self) -> dict[str, Any]:
        """The plugin's state as JSON data."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Replace the plugin's state with ``state`` (a ``state_dict()`` of an earlier instance)."""
        ...
