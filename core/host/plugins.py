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
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import pluggy
import structlog

from arena.core.api import hookspecs
from arena.core.api.errors import PluginError, UnknownNameError
from arena.core.api.markers import PROJECT_NAME
from arena.core.api.state import StatefulPlugin

log = structlog.get_logger(__name__)

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
    #: Functions named like a hook but without ``@hookimpl`` (never called).
    unmarked: tuple[str, ...] = ()


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
            instance = plugin_instance(obj)
            validate_plugin(ep.name, instance)
            hooks = implemented_hooks(instance)
            unmarked = tuple(unmarked_hooks(instance))
            loaded.append(_Loaded(PluginInfo(ep.name, dist, version, ep.value, hooks, unmarked=unmarked), obj))
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
            pm.register(plugin_instance(entry.obj), name=entry.info.name)
    return pm


def reset_caches() -> None:
    """Forget what was discovered (tests that install a plugin mid-run need this)."""
    _load_installed.cache_clear()
    registration_manager.cache_clear()
    from arena.core.host import catalog

    catalog.reset()


def plugin_instance(obj: object) -> object:
    """What gets registered: a fresh instance when the entry point names a class (a stateful plugin), else the
    module or object itself (a stateless plugin: its hooks are plain functions)."""
    if isinstance(obj, type):
        try:
            return obj()
        except Exception as exc:
            raise PluginError(f"plugin class {obj.__qualname__} cannot be created without arguments: {exc}") from exc
    return obj


def is_stateful(obj: object) -> bool:
    """Whether ``obj`` follows the ``StatefulPlugin`` protocol of ``arena.core.api.state``."""
    return isinstance(obj, StatefulPlugin)


class PluginSet:
    """The plugins enabled for one run or one learner: its own pluggy ``PluginManager`` (``pm``) and instances.

    Each ``PluginSet`` is a separate host, as each pytest session is: a plugin published as a class gets a fresh
    instance here, so two learners enabling the same stateful plugin share nothing. Plugins are registered in
    reverse config order because pluggy calls the last registered first: the hooks then run in config order,
    and ``tryfirst``, ``trylast`` and wrappers (``wrapper=True``, ``hookwrapper=True``) reorder and wrap them as
    pluggy documents. Every hook is called through ``pm.hook`` (see :meth:`call`).

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
                obj = plugin_instance(extra[name])
                validate_plugin(name, obj)
            else:
                try:
                    obj = plugin_instance(installed_plugin(name))
                except UnknownNameError:
                    available = [e.info.name for e in _load_installed()] + list(extra)
                    raise UnknownNameError("plugin", name, available) from None
            self._objects[name] = obj
            for hook in unmarked_hooks(obj):
                log.warning(
                    f"plugin {name!r} defines {hook!r} without @hookimpl, so it is never called; mark it with "
                    "`@hookimpl` (from arena.core)",
                    plugin=name,
                    hook=hook,
                )
        for name in reversed(self.names):
            self.pm.register(self._objects[name], name=name)
        self._check_firstresult_conflicts()

    @property
    def hook(self) -> Any:
        """``pm.hook``: call ``plugins.hook.NAME(**kwargs)`` for pluggy's own result (errors not renamed)."""
        return self.pm.hook

    def _check_firstresult_conflicts(self) -> None:
        for hook in spec_names():
            caller = getattr(self.pm.hook, hook)
            if caller.spec is None or not caller.spec.opts.get("firstresult"):
                continue
            owners = [impl.plugin_name for impl in caller.get_hookimpls() if not _is_wrapper(impl)]
            if len(owners) > 1:
                ordered = [n for n in self.names if n in owners]
                raise PluginError(
                    f"plugins {' and '.join(map(repr, ordered))} both implement {hook!r}, which only one "
                    "plugin per learner may answer; enable one of them"
                )

    def call(self, hook: str, **kwargs: Any) -> Any:
        """``pm.hook.<hook>(**kwargs)``: the list of non-None results in call order (config order unless a plugin
        says ``tryfirst``/``trylast``), or for a ``firstresult`` hook the first non-None result (None when no
        plugin answers).

        An exception from a plugin is re-raised as ``PluginError`` naming the plugin and the hook, chained to the
        original; the plugin is the innermost hook implementation on the traceback.
        """
        caller = getattr(self.pm.hook, hook)
        try:
            result = caller(**kwargs)
        except PluginError:
            raise
        except Exception as exc:
            name = self._culprit(caller, exc)
            where = f"plugin {name!r}" if name else "a plugin"
            raise PluginError(f"{where} failed in hook {hook!r}: {type(exc).__name__}: {exc}") from exc
        if result is None or _expected(hook) is None:  # most hooks: nothing to check
            return result
        firstresult = bool(caller.spec is not None and caller.spec.opts.get("firstresult"))
        for value in [result] if firstresult else result:
            problem = result_problem(hook, value)
            if problem is not None:
                owners = self.implements(hook)
                who = f"plugin {owners[0]!r}" if len(owners) == 1 else f"one of the plugins {', '.join(owners)}"
                raise PluginError(f"{who} returned {problem} from hook {hook!r}")
        return result

    def first(self, hook: str, **kwargs: Any) -> Any:
        """Call a ``firstresult`` hook; None when no enabled plugin implements it."""
        caller = getattr(self.pm.hook, hook)
        if caller.spec is None or not caller.spec.opts.get("firstresult"):
            raise PluginError(f"hook {hook!r} is not a firstresult hook; use call()")
        return self.call(hook, **kwargs)

    @staticmethod
    def _culprit(caller: Any, exc: BaseException) -> str | None:
        codes = {}
        for impl in caller.get_hookimpls():
            function = getattr(impl.function, "__func__", impl.function)
            code = getattr(function, "__code__", None)
            if code is not None:
                codes[code] = impl.plugin_name
        culprit = None
        tb = exc.__traceback__
        while tb is not None:
            culprit = codes.get(tb.tb_frame.f_code, culprit)
            tb = tb.tb_next
        return culprit

    def implements(self, hook: str) -> list[str]:
        """The enabled plugins that implement ``hook`` (wrappers included), in config order."""
        owners = {impl.plugin_name for impl in getattr(self.pm.hook, hook).get_hookimpls()}
        return [n for n in self.names if n in owners]

    def plugin(self, name: str) -> object:
        """The object registered for ``name`` (this set's own instance for a plugin published as a class)."""
        return self._objects[name]

    def state_dict(self) -> dict[str, Any]:
        """Every stateful plugin's ``state_dict()`` by name (``StatefulPlugin``, arena.core.api.state)."""
        return {name: obj.state_dict() for name, obj in self._objects.items() if isinstance(obj, StatefulPlugin)}

    def load_state_dict(self, states: Mapping[str, Any]) -> None:
        """Give each stateful plugin its saved state; a state for a plugin that keeps none is an error."""
        for name, state in states.items():
            obj = self._objects.get(name)
            if obj is None:
                continue  # the plugin is not enabled here (an eval with fewer plugins)
            if not isinstance(obj, StatefulPlugin):
                raise PluginError(f"plugin {name!r} has saved state but no load_state_dict (StatefulPlugin)")
            obj.load_state_dict(state)

    def __repr__(self) -> str:
        return f"PluginSet({list(self.names)!r})"


def _is_wrapper(impl: Any) -> bool:
    return bool(getattr(impl, "wrapper", False) or getattr(impl, "hookwrapper", False))


def check_plugin_options(sections: Sequence[tuple[str, Sequence[str], Mapping[str, Any]]], source: str) -> None:
    """For each (key prefix, enabled plugins, options): build the options of every installed plugin that declares
    ``Settings``; a plugin that is not installed fails later, where the learner is set up, with its own message."""
    from arena.core.config.plugin_settings import check_learner_options

    for prefix, plugins, options in sections:
        objects: dict[str, object] = {}
        for name in plugins:
            try:
                objects[name] = installed_plugin(name)
            except (PluginError, UnknownNameError):
                continue
        check_learner_options(objects, plugins, options, source, prefix)


# -- what hooks return ---------------------------------------------------------------------------------------------


@functools.cache
def _expected(hook: str) -> tuple[type, type | None] | None:
    """(outer type, item type) a hook's non-None result must have, read off its spec's return annotation:
    ``ActionPlan | None`` -> (ActionPlan, None); ``list[MemoryItem] | None`` -> (list, MemoryItem). None when the
    annotation names no record (``Any``, ``None``, ``list[float]``)."""
    spec = getattr(hookspecs, hook, None)
    if spec is None:
        return None
    try:
        hint = typing.get_type_hints(spec).get("return")
    except Exception:  # an annotation that does not resolve checks nothing
        return None
    options = (
        [a for a in typing.get_args(hint)] if typing.get_origin(hint) in (typing.Union, types.UnionType) else [hint]
    )
    options = [a for a in options if a is not type(None)]
    if len(options) != 1:
        return None
    tp = options[0]
    origin = typing.get_origin(tp)
    # Only records and lists of records are checked: numbers may come as numpy scalars, sequences as arrays.
    if origin is list:
        (item,) = typing.get_args(tp) or (Any,)
        return (list, item) if isinstance(item, type) and attrs.has(item) else None
    return (tp, None) if isinstance(tp, type) and attrs.has(tp) else None


def result_problem(hook: str, value: Any) -> str | None:
    """Why ``value`` is not what ``hook`` returns (``"a str where ActionPlan is expected"``), or None."""
    expected = _expected(hook)
    if expected is None:
        return None
    outer, item = expected
    if not isinstance(value, outer):
        return f"{_a(type(value).__name__)} where {outer.__name__} is expected"
    if item is not None and isinstance(value, list):
        for element in value:
            if not isinstance(element, item):
                return f"a list holding {_a(type(element).__name__)} where list[{item.__name__}] is expected"
    return None


def _a(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


def unmarked_hooks(obj: object) -> list[str]:
    """Functions of ``obj`` named like a hook but without ``@hookimpl``: pluggy would silently never call them."""
    marked = set(implemented_hooks(obj))
    out = []
    for name in spec_names():
        if name in marked:
            continue
        try:
            attr = getattr(obj, name, None)
        except Exception:
            continue
        if callable(attr):
            out.append(name)
    return out
