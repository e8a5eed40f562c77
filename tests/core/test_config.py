"""Config validation: unknown keys and wrong types name the file, the key and what was expected."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena.core.api.errors import ConfigError
from arena.core.config.loader import load_config
from arena.core.config.trial import PlayConfig


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "play.yaml"
    path.write_text(text)
    return path


def test_valid_config_with_overrides(tmp_path: Path) -> None:
    path = write(tmp_path, "arena: kuhn_poker\nseats: [cfr, random]\ntrial:\n  episodes: 3\n")
    config = load_config(PlayConfig, path, overrides=["games=7", "trial.invalid_action.policy=retry"])
    assert config.games == 7 and config.trial.episodes == 3
    assert config.trial.invalid_action.policy == "retry"
    assert config.seats == ["cfr", "random"]


def test_typo_names_file_key_and_suggestion(tmp_path: Path) -> None:
    path = write(tmp_path, "arena: kuhn_poker\nseats: [cfr, random]\ntrial:\n  episods: 3\n")
    with pytest.raises(ConfigError, match=r"play\.yaml: unknown key 'trial\.episods' \(did you mean 'episodes'\?\)"):
        load_config(PlayConfig, path)


def test_wrong_type_names_expected_type(tmp_path: Path) -> None:
    path = write(tmp_path, "arena: kuhn_poker\nseats: [cfr, random]\ngames: ten\n")
    with pytest.raises(ConfigError, match=r"key 'games' expects int, got str 'ten'"):
        load_config(PlayConfig, path)


def test_bad_choice_and_bad_value(tmp_path: Path) -> None:
    path = write(tmp_path, "arena: kuhn_poker\nseats: [cfr, random]\n")
    with pytest.raises(ConfigError, match=r"'trial\.invalid_action\.policy' expects one of"):
        load_config(PlayConfig, path, overrides=["trial.invalid_action.policy=shrug"])
    with pytest.raises(ConfigError, match="games must be at least 1"):
        load_config(PlayConfig, path, overrides=["games=0"])


def test_missing_required_key() -> None:
    with pytest.raises(ConfigError, match="missing required key 'seats'"):
        load_config(PlayConfig, data={"arena": "kuhn_poker"})


def test_override_syntax_error() -> None:
    with pytest.raises(ConfigError, match="key=value"):
        load_config(PlayConfig, data={"arena": "x", "seats": []}, overrides=["games"])


def test_shipped_configs_load_by_name() -> None:
    config = load_config(PlayConfig, "play_kuhn_trials")
    assert config.arena == "kuhn_poker" and config.trial.episodes == 3


def test_missing_config_lists_shipped_ones() -> None:
    with pytest.raises(ConfigError, match=r"no config file 'nope'; shipped configs: .*play_kuhn_trials"):
        load_config(PlayConfig, "nope")


def test_every_shipped_config_validates() -> None:
    from importlib import resources

    import yaml

    from arena.core.learn.run_config import TrainConfig
    from arena.plugins.safari import SafariConfig

    shipped = [p for p in resources.files("arena.configs").iterdir() if p.name.endswith(".yaml")]
    assert len(shipped) >= 3
    for entry in shipped:
        raw = yaml.safe_load(entry.read_text())
        if "expert" in raw:  # `arena safari run` pipelines
            cls: type = SafariConfig
        elif "learners" in raw or "opponents" in raw:
            cls = TrainConfig
        else:
            cls = PlayConfig
        config = load_config(cls, str(entry))
        for learner in getattr(config, "learners", []):
            assert learner.unused_options == [], f"{entry.name}: options for plugins not enabled"


def test_options_of_a_plugin_taken_off_the_list_are_reported() -> None:
    from arena.core.learn.run_config import TrainConfig

    config = load_config(TrainConfig, "coding_grpo", overrides=["learners.0.plugins=[grpo]"])
    assert config.learners[0].unused_options == ["overlong"]


def test_overrides_index_into_lists() -> None:
    from arena.core.learn.run_config import TrainConfig

    config = load_config(TrainConfig, "kuhn_grpo", overrides=["learners.0.optim.lr=0.5", "opponents.1.weight=2"])
    assert config.learners[0].optim.lr == 0.5 and config.opponents[1].weight == 2.0
    assert config.learners[0].plugins == ["grpo"]  # the rest of the item is kept
    with pytest.raises(ConfigError, match="has no item '7'"):
        load_config(TrainConfig, "kuhn_grpo", overrides=["learners.7.optim.lr=0.5"])
