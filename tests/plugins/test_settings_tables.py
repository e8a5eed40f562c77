"""Each plugin's settings table (its docstring) names exactly the settings it reads, with their real defaults.

The table is what a user reads and what METHODS.md is checked against; ``arena plugins --json`` prints the
``DEFAULTS`` the code uses. A default changed in one place and not the other (issue 22 changed three) fails here.
"""

from __future__ import annotations

import ast
import importlib
import json
import re

import pytest
from click.testing import CliRunner

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


@pytest.mark.parametrize("name", WITH_TABLES)
def test_settings_table_matches_the_defaults(name: str) -> None:
    module = importlib.import_module(f"arena.plugins.{name}")
    rows = dict(ROW.findall(module.__doc__ or ""))
    derived = DERIVED.get(name, set())
    assert set(rows) - derived == set(module.DEFAULTS) - derived, f"{name}: table and DEFAULTS name other settings"
    for key, text in rows.items():
        if key in derived:
            continue
        value = table_value(text)
        if value is ...:
            continue  # a long instruction text, summarised in the table
        if isinstance(value, str) and value.endswith("…"):
            assert str(module.DEFAULTS[key]).startswith(value.removesuffix("…").strip()), f"{name}.{key}"
            continue
        assert value == module.DEFAULTS[key], f"{name}.{key}: table says {text}, code uses {module.DEFAULTS[key]!r}"


def test_arena_plugins_json_shows_each_plugins_defaults() -> None:
    result = CliRunner().invoke(cli, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    by_name = {p["name"]: p for p in json.loads(result.output)}
    assert by_name["mage"]["settings"]["reflection_anchor"] is True
    assert by_name["mentor"]["settings"]["old_logprobs"] == "policy"
    assert by_name["herl"]["settings"]["temperature"] == 0.3
    for name in WITH_TABLES:
        assert by_name[name]["settings"] == json.loads(
            json.dumps(importlib.import_module(f"arena.plugins.{name}").DEFAULTS)
        )
