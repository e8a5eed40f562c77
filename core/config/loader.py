"""YAML configs validated into frozen attrs classes.

``load_config(PlayConfig, path, overrides)`` reads the file, applies ``key.sub=value`` overrides (values are
parsed as YAML, so ``games=10`` is an int and ``seats=[random,cfr]`` a list) and checks every key and type.
An unknown key or a wrong type is a ``ConfigError`` naming the file, the dotted key and what was expected.
"""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import yaml

from arena.core.api.errors import ConfigError

T = TypeVar("T")
_FLOAT_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def resolve_config_path(name: str | Path) -> Path:
    """A path as given, else a config shipped in ``arena.configs`` (``kuhn_mage`` or ``kuhn_mage.yaml``)."""
    path = Path(name)
    if path.exists():
        return path
    from importlib import resources

    shipped = resources.files("arena.configs")
    for candidate in (str(name), f"{name}.yaml"):
        entry = shipped / candidate
        if entry.is_file():
            return Path(str(entry))
    available = sorted(p.name.removesuffix(".yaml") for p in shipped.iterdir() if p.name.endswith(".yaml"))
    raise ConfigError(f"no config file {str(name)!r}; shipped configs: {', '.join(available) or 'none'}")


def load_config(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    data: Mapping[str, Any] | None = None,
) -> T:
    """Build ``cls`` from a YAML file and/or a mapping, then ``key=value`` overrides."""
    if path is not None:
        path = resolve_config_path(path)
    source = str(path) if path is not None else "<config>"
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"{source}: cannot read config: {exc.strerror}") from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source}: not valid YAML: {' '.join(str(exc).split())}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise ConfigError(f"{source}: expected a mapping at the top level, got {type(loaded).__name__}")
        raw = loaded
    if data is not None:
        raw = _deep_merge(raw, dict(data))
    for override in overrides:
        raw = apply_override(raw, override, source)
    config = build(cls, raw, source, prefix="")
    # A config class may check what one field alone cannot (plugin settings against the plugins' declarations).
    after_load = getattr(config, "after_load", None)
    if callable(after_load):
        after_load(source)
    return config


def apply_override(raw: dict[str, Any], override: str, source: str = "<config>") -> dict[str, Any]:
    if "=" not in override:
        raise ConfigError(f"override {override!r} is not of the form key=value")
    key, _, value_text = override.partition("=")
    key = key.strip()
    if not key:
        raise ConfigError(f"override {override!r} has an empty key")
    try:
        value = yaml.safe_load(value_text) if value_text.strip() else ""
    except yaml.YAMLError:
        value = value_text
    result = _deep_merge({}, raw)
    node: Any = result
    parts = key.split(".")
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(node, list):  # `learners.0.optim.lr=...` indexes into a list
            if not part.isdigit() or int(part) >= len(node):
                raise ConfigError(f"override {override!r}: {'.'.join(parts[:depth]) or key!r} has no item {part!r}")
            if last:
                node[int(part)] = value
                break
            node[int(part)] = _deep_merge({}, node[int(part)]) if isinstance(node[int(part)], dict) else node[int(part)]
            node = node[int(part)]
            continue
        if last:
            node[part] = value
            break
        child = node.get(part)
        if isinstance(child, list):
            child = [_deep_merge({}, c) if isinstance(c, dict) else c for c in child]
        elif not isinstance(child, dict):
            child = {}
        node[part] = child
        node = child
    return result


def _deep_merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        elif isinstance(value, dict):
            out[key] = _deep_merge({}, value)
        else:
            out[key] = value
    return out


def build(cls: type[T], raw: Any, source: str, prefix: str) -> T:
    """``cls`` from the mapping ``raw``: unknown keys, wrong types and refused values are one-line ConfigErrors
    naming ``source`` and the key (``prefix`` + field)."""
    where = prefix.rstrip(".") or "the top level"
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: {where} expects a mapping, got {_describe(raw)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in attrs.fields(cls)}  # type: ignore[arg-type]
    for key in raw:
        if key not in fields:
            close = difflib.get_close_matches(str(key), list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(
                f"{source}: unknown key {prefix + str(key)!r}{hint}; expected one of: {', '.join(fields)}"
            )
    kwargs: dict[str, Any] = {}
    for name, field in fields.items():
        if name in raw:
            kwargs[name] = _convert(hints[name], raw[name], source, prefix + name)
        elif field.default is attrs.NOTHING:
            raise ConfigError(f"{source}: missing required key {prefix + name!r}")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{source}: {where}: {exc}") from None


def _convert(tp: Any, value: Any, source: str, key: str) -> Any:
    origin = get_origin(tp)
    args = get_args(tp)
    if tp is Any:
        return value
    if attrs.has(tp):
        return build(tp, value if value is not None else {}, source, key + ".")
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for option in args:
            if option is type(None):
                continue
            try:
                return _convert(option, value, source, key)
            except ConfigError as exc:
                errors.append(exc)
        raise _type_error(source, key, tp, value)
    if origin is Literal:
        if value in args:
            return value
        raise ConfigError(f"{source}: key {key!r} expects one of {', '.join(map(repr, args))}, got {value!r}")
    if origin in (list, tuple, Sequence) or tp in (list, tuple):
        if isinstance(value, str) or not isinstance(value, list | tuple):
            raise _type_error(source, key, tp, value)
        inner = args[0] if args else Any
        items = [_convert(inner, v, source, f"{key}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple or tp is tuple else items
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            raise _type_error(source, key, tp, value)
        vt = args[1] if len(args) == 2 else Any
        return {str(k): _convert(vt, v, source, f"{key}.{k}") for k, v in value.items()}
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise _type_error(source, key, tp, value)
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _type_error(source, key, tp, value)
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value.strip()):
            # YAML 1.1 reads ``3e-4`` (no dot) as a string; a float-typed key takes it as the number it spells.
            return float(value)
        raise _type_error(source, key, tp, value)
    if tp is str:
        if isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise _type_error(source, key, tp, value)
    return value


def _type_name(tp: Any) -> str:
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _type_error(source: str, key: str, tp: Any, value: Any) -> ConfigError:
    return ConfigError(f"{source}: key {key!r} expects {_type_name(tp)}, got {_describe(value)}")


def to_dict(config: Any) -> dict[str, Any]:
    """The resolved config as plain data (for run directories and ``--json``)."""
    return attrs.asdict(config, recurse=True)
