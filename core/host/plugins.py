"""Plugin discovery, validation and per-run enabling.

Plugins are modules (or objects) with ``@hookimpl`` functions, published under the entry-point group
``arena``. Every installed plugin takes part in the registration hooks (so its arenas and opponents are in
the catalogue); only the plugins a run's config names take part in the trial, learning and population
hooks, and each learner of a population gets its own ``PluginSet``.
"""

from __future__ import annotations

import difflib
import functools
import importlib.metadata as md
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pluggy

from arena.core.api import hookspecs
from arena.core.api.errors import PluginError, UnknownNameError
from arena.core.api.markers import PROJECT_NAME

ENTRY_POINT_GROUP = "arena"
REGISTRATION_HOOKS = frozenset(
    {"register_arenas", "register_opponents", "register_backends", "register_models", "register_commands"}
)


@attrs.frozen
class PluginInfo:
    """What ``arena plugins`` shows about one installed plugin."""

    name: str
    distribution: str
    version: str
    module: str
    hooks: tuple[str, ...]
    error: str | None = None


@attrs.frozen(eq=False)
class _Loaded:
    info: PluginInfo
    obj: object | None


def new_manager() -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


def spec_names() -> list[str]:
    return sorted(name for name in dir(hookspecs) if hasattr(getattr(hookspecs, name), f"{PROJECT_NAME}_spec"))


def implemented_hooks(obj: object) -> tuple[str, ...]:
    """Names of the ``@hookimpl`` functions of ``obj`` (specced or not)."""
    pm = new_manager()
    names = []
    for attr in dir(obj):
        try:
            if pm.parse_hookimpl_opts(obj, attr) is not None:
                names.append(attr)
        except Exception:  # a property that raises on access is not a hook
            continue
    return tuple(sorted(names))


def validate_plugin(name: str, obj: object) -> None:
    """Register ``obj`` in a scratch manager: wrong argument names and hooks without a spec are errors."""
    pm = new_manager()
    try:
        pm.register(obj, name=name)
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"plugin {name!r}: {_clean(exc)}") from None
    known = set(spec_names())
    for hook in implemented_hooks(obj):
        if hook not in known:
            close = difflib.get_close_matches(hook, sorted(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise PluginError(f"plugin {name!r} implements hook {hook!r}, which has no specification{hint}")


def _clean(exc: pluggy.PluginValidationError) -> str:
    text = str(exc).strip().replace("\n", " ")
    return " ".join(text.split())


@functools.cache
def _load_installed() -> tuple[_Loaded, ...]:
    loaded: list[_Loaded] = []
    seen: set[str] = set()
    for ep in sorted(md.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        if ep.name in seen:  # the same distribution seen twice on sys.path
            continue
        seen.add(ep.name)
        dist = ep.dist.name if ep.dist is not None else "?"
        version = ep.dist.version if ep.dist is not None else "?"
        try:
            obj = ep.load()
            validate_plugin(ep.name, obj)
            hooks = implemented_hooks(obj)
            loaded.append(_Loaded(PluginInfo(ep.name, dist, version, ep.value, hooks), obj))
        except PluginError as exc:
            loaded.append(_Loaded(PluginInfo(ep.name, dist, version, ep.value, (), str(exc)), None))
        except Exception as exc:  # an import error in someone's plugin must not take the CLI down
            error = f"plugin {ep.name!r} ({dist}) failed to load: {type(exc).__name__}: {exc}"
            loaded.append(_Loaded(PluginInfo(ep.name, dist, version, ep.value, (), error), None))
    return tuple(loaded)


def installed_plugins() -> list[PluginInfo]:
    """Every plugin under the ``arena`` entry-point group, including ones that failed to load."""
    return [entry.info for entry in _load_installed()]


def installed_plugin(name: str) -> object:
    for entry in _load_installed():
        if entry.info.name == name:
            if entry.obj is None:
                raise PluginError(entry.info.error or f"plugin {name!r} failed to load")
            return entry.obj
    raise UnknownNameError("plugin", name, [e.info.name for e in _load_installed()])


@functools.cache
def registration_manager() -> pluggy.PluginManager:
    """A manager holding every installed plugin that loaded; used for the ``register_*`` hooks only."""
    pm = new_manager()
    for entry in _load_installed():
        if entry.obj is not None:
            pm.register(entry.obj, name=entry.info.name)
    return pm


def reset_caches() -> None:
    """Forget what was discovered (tests that install a plugin mid-run need this)."""
    _load_installed.cache_clear()
    registration_manager.cache_clear()
    from arena.core.host import catalog

    catalog.reset()


class PluginSet:
    """The plugins enabled for one run or one learner, in config order.

    ``extra`` maps names to plugin objects that are not installed (tests, notebooks); they can be enabled by
    name like installed ones.
    """

    def __init__(self, names: Sequence[str], extra: Mapping[str, object] | None = None) -> None:
        extra = dict(extra or {})
        self.names: tuple[str, ...] = tuple(names)
        if len(set(self.names)) != len(self.names):
            dupes = sorted({n for n in self.names if self.names.count(n) > 1})
            raise PluginError(f"plugin(s) {', '.join(map(repr, dupes))} enabled twice")
        self.pm = new_manager()
        self._objects: dict[str, object] = {}
        for name in self.names:
            if name in extra:
                obj = extra[name]
                validate_plugin(name, obj)
            else:
                try:
                    obj = installed_plugin(name)
                except UnknownNameError:
                    available = [e.info.name for e in _load_installed()] + list(extra)
                    raise UnknownNameError("plugin", name, available) from None
            self.pm.register(obj, name=name)
            self._objects[name] = obj
        self._check_firstresult_conflicts()

    def _check_firstresult_conflicts(self) -> None:
        for hook in spec_names():
            caller = getattr(self.pm.hook, hook)
            if caller.spec is None or not caller.spec.opts.get("firstresult"):
                continue
            owners = [impl.plugin_name for impl in caller.get_hookimpls()]
            if len(owners) > 1:
                ordered = [n for n in self.names if n in owners]
                raise PluginError(
                    f"plugins {' and '.join(map(repr, ordered))} both implement {hook!r}, which only one "
                    "plugin per learner may answer; enable one of them"
                )

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call a 1:N hook; ``(plugin name, result)`` for each non-None result, in config order.

        Exceptions are re-raised as ``PluginError`` naming the plugin and hook, chained to the original.
        """
        impls = {impl.plugin_name: impl for impl in getattr(self.pm.hook, hook).get_hookimpls()}
        results: list[tuple[str, Any]] = []
        for name in self.names:
            impl = impls.get(name)
            if impl is None:
                continue
            try:
                result = impl.function(*[kwargs[arg] for arg in impl.argnames])
            except PluginError:
                raise
            except Exception as exc:
                raise PluginError(f"plugin {name!r} failed in hook {hook!r}: {type(exc).__name__}: {exc}") from exc
            if result is not None:
                results.append((name, result))
        return results

    def first(self, hook: str, **kwargs: Any) -> Any:
        """Call a firstresult hook; None when no enabled plugin implements it."""
        results = self.call(hook, **kwargs)
        return results[0][1] if results else None

    def implements(self, hook: str) -> list[str]:
        owners = {impl.plugin_name for impl in getattr(self.pm.hook, hook).get_hookimpls()}
        return [n for n in self.names if n in owners]

    def __repr__(self) -> str:
        return f"PluginSet({list(self.names)!r})"
