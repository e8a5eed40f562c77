"""Reading a plugin's settings out of the learner's ``options`` mapping (shared by the advantage estimators).

``options`` maps plugin names to settings dicts (see ``compute_advantages`` in ``arena.core.api.hookspecs``). A setting
the plugin does not know is an error rather than silently ignored: a typo (``std_nrom``) would otherwise run the
default without anyone noticing.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from arena.core import ConfigError


def read_options(
    options: Mapping[str, Mapping[str, Any]] | None, plugin: str, defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """``defaults`` overridden by ``options[plugin]``; unknown keys and values of the wrong kind raise ``ConfigError``.

    The kind of each default decides what is accepted: a bool needs a bool, a float any real number (returned as
    float), an int an int (not a bool), a str a str.
    """
    given = dict((options or {}).get(plugin) or {})
    unknown = sorted(set(given) - set(defaults))
    if unknown:
        raise ConfigError(
            f"plugin {plugin!r}: unknown setting(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(sorted(defaults))}"
        )
    out = dict(defaults)
    for key, value in given.items():
        default = defaults[key]
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, float):
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            value = float(value) if ok else value
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise ConfigError(f"plugin {plugin!r}: setting {key!r} should be a {type(default).__name__}, got {value!r}")
        out[key] = value
    return out
