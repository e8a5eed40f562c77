"""Typed plugin settings: a learner's ``options.NAME`` is checked against plugin NAME's ``Settings`` at load."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from arena.core import ConfigError, read_settings, setting
from arena.core.api.settings import describe_settings, settings_class
from arena.core.cli.main import main

CONFIG = """
arena: kuhn_poker
opponents: [{{spec: conservative}}]
learners:
  - name: a
    model: {model}
    plugins: [grpo]
    options: {{grpo: {options}}}
"""


def run_train(tmp_path: Path, capsys: pytest.CaptureFixture[str], options: str, *extra: str) -> str:
    path = tmp_path / "run.yaml"
    # The model does not exist: an error about it would mean the options were checked too late.
    path.write_text(CONFIG.format(model=tmp_path / "no-such-model", options=options))
    assert main(["train", "--population", str(path), *extra, "--out", str(tmp_path / "out")]) != 0
    return capsys.readouterr().err


def test_a_mistyped_option_fails_before_the_model_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_train(tmp_path, capsys, "{std_nrom: false}")
    assert "unknown key 'learners.0.options.grpo.std_nrom' (did you mean 'std_norm'?)" in out
    assert "run.yaml" in out and "no-such-model" not in out
    assert not (tmp_path / "out").exists()


def test_a_wrong_type_names_the_key_and_the_type(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_train(tmp_path, capsys, "{}", "learners.0.options.grpo.std_norm=maybe")
    assert "key 'learners.0.options.grpo.std_norm' expects bool, got str 'maybe'" in out


def test_a_refused_value_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run_train(tmp_path, capsys, "{eps: -1.0}")
    assert "learners.0.options.grpo" in out and "eps" in out and "Traceback" not in out


@attrs.frozen
class Example:
    """A settings class as a plugin declares one."""

    rate: float = setting(0.5, "how often", validator=attrs.validators.ge(0))
    kinds: tuple[str, ...] = setting(("action",), "which samples")


def test_hooks_read_typed_values_and_errors_name_the_plugin() -> None:
    opts = read_settings({"ex": {"rate": 1, "kinds": ["action", "reflection"]}}, "ex", Example)
    assert opts == Example(rate=1.0, kinds=("action", "reflection")) and isinstance(opts.rate, float)
    assert read_settings(None, "ex", Example) == Example()
    with pytest.raises(ConfigError, match=r"plugin 'ex': unknown key 'options\.ex\.rat' \(did you mean 'rate'\?\)"):
        read_settings({"ex": {"rat": 1}}, "ex", Example)


def test_describe_settings_gives_type_default_and_doc() -> None:
    assert describe_settings(Example) == [
        {"name": "rate", "type": "float", "default": 0.5, "doc": "how often"},
        {"name": "kinds", "type": "tuple[str, ...]", "default": ["action"], "doc": "which samples"},
    ]
    assert settings_class(type("P", (), {"Settings": Example})) is Example
    assert settings_class(object()) is None
