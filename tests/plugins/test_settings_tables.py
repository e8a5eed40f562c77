"""Each plugin's settings table (its docstring) names exactly the settings it reads, with their real defaults.

The table is what a user reads and what METHODS.md is checked against; ``arena plugins --json`` prints the
fields of the plugin's ``Settings`` class (name, type, default, doc), the defaults the code uses. A default changed in
one place and not the other (issue 22 changed three) fails here.
"""

from __future__ import annotations

import ast
import importlib
import json
import re

import pytest
from click.testing import CliRunner

from arena.core.api.settings import describe_settings, settings_class
from arena.core.cli.main import cli

WITH_TABLES = [
    "drgrpo",
    "empo2",
    "entropy_adv",
    "gigpo",
    "golf",
    "grpo",
    "herl",
    "mage",
    "mentor",
    "overlong",
    "rae",
    "reinforce",
    "rloo",
    "sge",
]
ROW = re.compile(r"^\| ``(\w+)`` \| (.*?) \|", re.MULTILINE)
#: Settings whose default the table states in words because it depends on the run.
DERIVED = {"overlong": {"max_length", "cache"}, "mentor": {"expert"}}


def table_value(text: str) -> object:
    """The default as the table writes it (``0.25``, ``"states"``, ``true``, ``2/3``), or ``...`` when in words."""
    match = re.fullmatch(r"``(.*)``", text.strip())
    if not match:
        return ...
    literal = match.group(1).replace("true", "True").replace("false", "False")
    if re.fullmatch(r"\d+/\d+", literal):
        numerator, denominator = literal.split("/")
        return int(numerator) / int(denominator)
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return literal  # a bare word such as ``trajectory``


def defaults(name: str) -> dict[str, object]:
    """The plugin's settings and their defaults, as ``arena plugins --json`` prints them (tuples as lists)."""
    cls = settings_class(importlib.import_module(f"arena.plugins.{name}"))
    assert cls is not None, f"{name} declares no Settings class"
    return {field["name"]: field["default"] for field in describe_settings(cls)}


@pytest.mark.parametrize("name", WITH_TABLES)
def test_settings_table_matches_the_defaults(name: str) -> None:
    module = importlib.import_module(f"arena.plugins.{name}")
    rows = dict(ROW.findall(module.__doc__ or ""))
    derived = DERIVED.get(name, set())
    code = defaults(name)
    assert set(rows) - derived == set(code) - derived, f"{name}: table and Settings name other settings"
    for key, text in rows.items():
        if key in derived:
            continue
        value = table_value(text)
        if value is ...:
            continue  # a long instruction text, summarised in the table
        if isinstance(value, str) and value.endswith("…"):
            assert str(code[key]).startswith(value.removesuffix("…").strip()), f"{name}.{key}"
            continue
        assert value == code[key], f"{name}.{key}: table says {text}, code uses {code[key]!r}"


@pytest.mark.parametrize("name", ["empo2", "mentor", "rae", "sge"])
def test_a_plugin_class_carries_its_settings(name: str) -> None:
    """Entry points of stateful plugins name the class: the config check finds ``Settings`` on it."""
    module = importlib.import_module(f"arena.plugins.{name}")
    (plugin_class,) = {getattr(module, attr) for attr in ("EMPO2", "Mentor", "RAE", "SGE") if hasattr(module, attr)}
    assert settings_class(plugin_class) is module.Settings


def test_arena_plugins_json_shows_each_plugins_defaults() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    by_name = {p["name"]: p for p in json.loads(result.output)}
    fields = {p: {f["name"]: f for f in by_name[p]["settings"]} for p in ("mage", "mentor", "herl", "overlong")}
    anchor = fields["mage"]["reflection_anchor"]
    assert (anchor["type"], anchor["default"]) == ("bool", True) and "reflection" in anchor["doc"]
    assert fields["mage"]["memory"]["type"] == "Literal['reflection_only', 'history_only', 'history_and_reflection']"
    assert fields["mentor"]["old_logprobs"]["default"] == "policy"
    assert fields["herl"]["temperature"]["default"] == 0.3
    assert fields["overlong"]["kinds"]["type"] == "tuple[str, ...]"
    assert fields["overlong"]["kinds"]["default"] == ["action"]
    for name in WITH_TABLES:
        printed = {f["name"]: f["default"] for f in by_name[name]["settings"]}
        assert printed == json.loads(json.dumps(defaults(name))), name
        assert all(f["doc"] for f in by_name[name]["settings"]), f"{name}: a setting without a doc"
