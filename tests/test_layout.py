"""The package layout draws the architecture: imports between packages go one way, and only the allowed ways.

Packages are the folders of the source tree (``core/api``, ``core/rollout``, ``arenas``, ``plugins`` ...), each
one node; an import of a module is an arrow from the importing module's package to the imported one's. The test
parses every module (imports inside functions and under ``TYPE_CHECKING`` count too: a cycle that only bites
lazily is still a cycle) and fails on a cycle between packages or on an arrow the design forbids.
docs/architecture.md draws the same graph and lists every module; the test checks that too.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Source folders and the package each is installed as.
SOURCES = {
    "core": "arena.core",
    "arenas": "arena.arenas",
    "plugins": "arena.plugins",
    "populations": "arena.populations",
}
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def modules() -> Iterator[tuple[str, Path]]:
    for folder, package in SOURCES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            name = ".".join((package, *parts)).removesuffix(".__init__")
            yield name, path


MODULES = dict(modules())


def package_of(module: str) -> str:
    """The package node of a module: its folder (the subpackages of arenas count as arenas)."""
    node = module if MODULES.get(module, Path()).name == "__init__.py" else module.rsplit(".", 1)[0]
    if node.startswith("arena.arenas"):
        return "arena.arenas"
    if node.startswith("arena.plugins"):
        return "arena.plugins"
    return node


def imported(path: Path) -> Iterator[str]:
    """Every arena module (or package) ``path`` imports, resolved to a name in MODULES."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        for target in targets:
            if not target.startswith("arena"):
                continue
            if target in MODULES:
                yield target
            elif target.rsplit(".", 1)[0] in MODULES:
                # ``from arena.core.api.errors import ArenaError``: the module, not the symbol
                yield target.rsplit(".", 1)[0]


def arrows() -> dict[tuple[str, str], list[str]]:
    """(from package, to package) -> the importing modules."""
    out: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module, path in MODULES.items():
        for target in imported(path):
            a, b = package_of(module), package_of(target)
            if a != b:
                out[(a, b)].append(f"{module} -> {target}")
    return out


ARROWS = arrows()


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in ARROWS:
        graph[a].add(b)
    cycles: list[list[str]] = []

    def visit(node: str, stack: list[str], done: set[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt in stack:
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in done:
                visit(nxt, [*stack, nxt], done)
        done.add(node)

    done: set[str] = set()
    for start in sorted(graph):
        if start not in done:
            visit(start, [start], done)
    detail = []
    for cycle in cycles[:5]:
        detail.append(" -> ".join(cycle))
        for a, b in itertools.pairwise(cycle):
            detail.append(f"    {a} -> {b}: {', '.join(ARROWS[(a, b)][:3])}")
    assert not cycles, "import cycles between packages:\n" + "\n".join(detail)


def forbidden(a: str, b: str) -> str | None:
    """Why the arrow a -> b is not allowed, or None."""
    if a == "arena.core.api":
        return "core/api is the contract: it imports nothing else of arena"
    if a == "arena.arenas" and b in {"arena.plugins", "arena.populations"}:
        return "arenas know nothing of plugins or populations"
    if a == "arena.plugins" and b != "arena.core":
        return "plugins import only the public surface, arena.core (no plugin imports another plugin)"
    if a.startswith("arena.core.") and b == "arena.core":
        return "inside the core, import the module, not the re-exports of arena.core"
    if a.startswith("arena.core") and b == "arena.plugins":
        return "the core calls plugins through hooks, never by import"
    if a == "arena.populations" and b.startswith("arena.core.") and b not in POPULATIONS_MAY_USE:
        return "populations sit below the run loop: they use the contract and the config loader only"
    return None


POPULATIONS_MAY_USE = {"arena.core.api", "arena.core.config"}


def test_no_forbidden_arrow() -> None:
    bad = [
        f"{a} -> {b} ({why}): {', '.join(ARROWS[(a, b)][:3])}"
        for (a, b) in sorted(ARROWS)
        if (why := forbidden(a, b)) is not None
    ]
    assert not bad, "forbidden imports:\n" + "\n".join(bad)


def test_the_checks_catch_what_they_should() -> None:
    assert forbidden("arena.core.api", "arena.core.host")
    assert forbidden("arena.arenas", "arena.plugins")
    assert forbidden("arena.plugins", "arena.core.rollout")
    assert forbidden("arena.core.rollout", "arena.core") and not forbidden("arena.plugins", "arena.core")
    assert package_of("arena.core.rollout.engine") == "arena.core.rollout"
    assert package_of("arena.arenas.opponents.cfr") == "arena.arenas"
    assert package_of("arena.core.models.tiny") == "arena.core.models.tiny"


def test_no_plugin_imports_another_plugin() -> None:
    # Inside one package there are no arrows, so this rule is checked on its own.
    bad = [
        f"{module} -> {target}"
        for module, path in MODULES.items()
        if module.startswith("arena.plugins.")
        for target in imported(path)
        if target.startswith("arena.plugins.") and target != module
    ]
    assert not bad, "plugins importing plugins:\n" + "\n".join(bad)


def test_architecture_doc_lists_every_module() -> None:
    text = ARCHITECTURE.read_text()
    listed = set(re.findall(r"`((?:core|arenas|plugins|populations)/[\w/]+\.py)`", text))
    present = {str(path.relative_to(ROOT)) for path in MODULES.values() if path.name != "__init__.py"}
    missing = sorted(present - listed)
    stale = sorted(listed - present)
    assert not missing, f"docs/architecture.md does not list: {', '.join(missing)}"
    assert not stale, f"docs/architecture.md lists modules that do not exist: {', '.join(stale)}"
