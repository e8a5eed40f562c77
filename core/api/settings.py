"""How a plugin declares its settings: one frozen attrs class, a docstring per field.

A plugin's settings are the ``options.NAME`` mapping of a learner in a run config. The plugin declares them as a
frozen attrs class named ``Settings`` on the plugin (a module attribute, or a class attribute of a plugin class),
each field made with :func:`setting`::

    @attrs.frozen
    class Settings:
        std_norm: bool = setting(True, "divide by the group's std")
        eps: float = setting(1e-6, "added to the std", validator=attrs.validators.gt(0))

The run config is checked against it when it loads (an unknown key or a wrong type is one line naming the file,
the key and the expected type, before any model loads), ``arena plugins --json`` prints each field's type, default
and doc, and the plugin's hooks read the typed values with ``read_settings(options, NAME, Settings)``
(``arena.core``). Lists are tuples (frozen); a choice among words is a ``Literal``.
"""

from __future__ import annotations

import typing
from typing import Any

import attrs

SETTINGS_ATTRIBUTE = "Settings"


def setting(default: Any, doc: str, validator: Any = None) -> Any:
    """One setting: its default, what it does (shown by ``arena plugins --json``) and an optional attrs validator."""
    return attrs.field(default=default, metadata={"doc": doc}, validator=validator)


def settings_class(plugin: object) -> type | None:
    """The plugin's ``Settings`` class, or None when it declares none."""
    cls = getattr(plugin, SETTINGS_ATTRIBUTE, None)
    return cls if isinstance(cls, type) and attrs.has(cls) else None


def describe_settings(cls: type) -> list[dict[str, Any]]:
    """Each field as ``{"name", "type", "default", "doc"}`` (defaults as plain data: tuples become lists)."""
    hints = typing.get_type_hints(cls)
    out = []
    for field in attrs.fields(cls):
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        out.append(
            {
                "name": field.name,
                "type": _type_name(hints.get(field.name, Any)),
                "default": list(default) if isinstance(default, tuple) else default,
                "doc": str(field.metadata.get("doc", "")),
            }
        )
    return out


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")
