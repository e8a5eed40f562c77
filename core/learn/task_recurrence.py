"""Per-task mechanisms need their task to come back: the run set-up warns when no task key can recur.

Some plugins keep what a training rollout produced under a *task key* that contains the trial's seed (a trial's
seed is its task: the deal, the layout, the coding problem) and read it back when a later rollout plays the same
task: SGE's strategy reflection (per-task FIFO buffers of earlier strategy sequences, visible from the next
iteration on) and EMPO²'s tip memory (one store per task). A group's seed recurs across iterations only with
``task_pool: N`` (``arena.populations.matchmaking.default_matchups``); with ``task_pool: 0`` every group draws a
fresh seed out of 2**31, so no key is met again: SGE's reflection never fires and EMPO²'s memory reaches only
the trials of the same group.

A plugin declares such mechanisms with a function ``recurring_tasks(options) -> list[str]`` in its module, beside
its hooks (an object entry point may carry it too): the mechanisms the learner's ``options`` enable, a few words
each, empty when none is. ``unreachable(config)`` lists them for every learner of a run in which no task key can
recur, and ``warn_unreachable`` logs them as one warning line at the start of a run (``arena.core.learn.run.Run``).
"""

from __future__ import annotations

import sys
from typing import Any

from arena.core.api.errors import ArenaError
from arena.core.learn.run_config import TrainConfig

HOOK = "recurring_tasks"

WARNING = (
    "per-task mechanisms will not meet their task again: task_pool is 0, so every group draws a fresh seed and no "
    "task key recurs across iterations; set task_pool: N to train on N recurring tasks"
)


def mechanisms(plugin_names: list[str], options: dict[str, dict[str, Any]]) -> list[str]:
    """``"plugin: mechanism"`` for each mechanism of these plugins that needs a recurring task key."""
    from arena.core.host.plugins import installed_plugin

    found = []
    for name in plugin_names:
        try:
            obj = installed_plugin(name)
        except ArenaError:  # an unknown or broken plugin fails later, with its own message
            continue
        # The plugin module, or a plugin class (``arena.plugins.sge:SGE``) and then its module.
        module = obj.__module__ if isinstance(obj, type) else type(obj).__module__
        declare = getattr(obj, HOOK, None) if not isinstance(obj, type) else None
        declare = declare or getattr(sys.modules.get(module), HOOK, None)
        if callable(declare):
            found += [f"{name}: {text}" for text in declare(options)]
    return found


def unreachable(config: TrainConfig) -> dict[str, list[str]]:
    """Per learner, the enabled mechanisms that need a recurring task key when the run has none (else {})."""
    if config.task_pool > 0:
        return {}
    out = {}
    for learner in config.learners:
        found = mechanisms(list(learner.plugins), dict(learner.options))
        if found:
            out[learner.name] = found
    return out


def warn_unreachable(config: TrainConfig, log: Any) -> dict[str, list[str]]:
    """Log one warning line when some learner's per-task mechanism cannot meet its task again; returns them."""
    found = unreachable(config)
    if found:
        log.warning(WARNING, task_pool=config.task_pool, mechanisms=found)
    return found
