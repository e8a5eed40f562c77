"""Plugin settings read and checked with the config loader: at load time for a whole run, and in hooks.

``check_learner_options`` runs when a run config loads (``TrainConfig``): every ``options.NAME`` of a learner is
built into plugin NAME's ``Settings`` class (``arena.core.api.settings``), so a typo or a wrong type is one line
naming the file and the key before any model loads. ``read_settings`` is what hooks call: the same conversion,
cached, returning the typed instance.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeVar, cast

from arena.core.api.errors import ConfigError
from arena.core.api.settings import settings_class
from arena.core.config.loader import build

T = TypeVar("T")


def read_settings(options: Mapping[str, Mapping[str, Any]] | None, name: str, cls: type[T]) -> T:
    """Plugin ``name``'s settings from a learner's ``options``: ``cls`` with ``options[name]`` applied.

    Unknown keys, wrong types and values a field's validator refuses raise ``ConfigError``.
    """
    given = (options or {}).get(name) or {}
    if not isinstance(given, Mapping):
        raise ConfigError(f"plugin {name!r}: options.{name} expects a mapping, got {type(given).__name__}")
    try:
        key = json.dumps(dict(given), sort_keys=True)
    except (TypeError, ValueError):  # not JSON data: build it uncached
        return build(cls, dict(given), f"plugin {name!r}", f"options.{name}.")
    result: T = _cached(cast(Hashable, cls), name, key)
    return result


@functools.lru_cache(maxsize=1024)
def _cached(cls: Any, name: str, key: str) -> Any:
    return build(cls, json.loads(key), f"plugin {name!r}", f"options.{name}.")


def check_learner_options(
    plugin_objects: Mapping[str, object], plugins: Sequence[str], options: Mapping[str, Any], source: str, prefix: str
) -> None:
    """Build each enabled plugin's ``options`` section into its ``Settings``; ``source``/``prefix`` place errors."""
    for name in plugins:
        obj = plugin_objects.get(name)
        cls = settings_class(obj) if obj is not None else None
        if cls is None or name not in options:
            continue
        build(cls, options[name] if options[name] is not None else {}, source, f"{prefix}{name}.")
