"""Bad settings: each is one line naming the key, from the config classes, before anything runs."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
import yaml

from arena.core.api.errors import ArenaError, ConfigError
from arena.core.config.loader import load_config
from arena.core.learn.run_config import TrainConfig
from arena.core.models import resolve_model
from tests.faults.conftest import arena_cli, config_text, write_config

BAD = {
    "learners.0.optim.grad_clip=-1": "grad_clip must be a finite number above 0",
    "learners.0.optim.grad_clip=.nan": "grad_clip must be a finite number above 0",
    "learners.0.loss.kl_coef=.nan": "kl_coef must be a finite number of at least 0, got nan",
    "learners.0.loss.kl_coef=-0.1": "kl_coef must be a finite number of at least 0",
    "learners.0.optim.micro_batch_tokens=-5": "micro_batch_tokens must be at least 1, got -5",
    "trial.prompt.temperature=-1": "temperature must be a finite number of at least 0",
    "trial.prompt.top_p=0": "top_p must be in (0, 1]",
    "learners.0.optim.lr=-1": "lr must be a finite number of at least 0, got -1.0",
    "learners.0.optim.lr=.inf": "lr must be a finite number of at least 0, got inf",
    "learners.0.optim.eps=0": "eps must be a finite number above 0",
    "learners.0.optim.betas=[0.9,1.5]": "betas must be two numbers in [0, 1)",
    "learners.0.optim.epochs=0": "epochs must be at least 1",
    "learners=[]": "learners is empty",
    "learners.0.loss.dual_clip=0.5": "dual_clip must be null or a finite number above 1",
}


@pytest.mark.parametrize("override", sorted(BAD))
def test_a_bad_setting_is_one_line(override: str, toy_dir: Path) -> None:
    data = yaml.safe_load(config_text(toy_dir))
    with pytest.raises(ConfigError) as caught:
        load_config(TrainConfig, data=data, overrides=[override])
    message = str(caught.value)
    assert BAD[override] in message and "\n" not in message, message


def test_settings_at_their_limits_load(toy_dir: Path) -> None:
    data = yaml.safe_load(config_text(toy_dir))
    ok = ["trial.prompt.temperature=0", "learners.0.optim.lr=0", "learners.0.loss.entropy_coef=-0.01"]
    load_config(TrainConfig, data=data, overrides=ok)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("tried the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)


def test_a_missing_model_path_is_one_line_without_the_hub(no_network: None, tmp_path: Path) -> None:
    for name in (str(tmp_path / "no" / "model"), "./missing-model", "runs/x/checkpoints/step-00000001/learners/a"):
        with pytest.raises(ArenaError, match=f"unknown model '{name}': no such directory"):
            resolve_model(name)


def test_an_unknown_hub_id_offline_is_one_line_without_the_hub(
    no_network: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    for name in ("tinny", "nobody/no-such-model"):
        with pytest.raises(ArenaError, match=f"unknown model '{name}': not a registered model .*tiny.*offline"):
            resolve_model(name)


def test_the_cli_names_the_model(toy_dir: Path, tmp_path: Path) -> None:
    config = write_config(tmp_path, toy_dir)
    proc = arena_cli(
        "train", "--population", str(config), "--out", str(tmp_path / "run"), "learners.0.model=tinny",
        env={"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")},
    )  # fmt: skip
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 2 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: unknown model 'tinny': not a registered model"), err


def test_an_unknown_hub_id_with_the_hub_unreachable_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from arena.core import models

    def unreachable(*args, **kwargs):
        raise ConnectionRefusedError("no route")

    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(socket, "create_connection", unreachable)
    models.hub_unreachable.cache_clear()
    try:
        with pytest.raises(ArenaError, match=r"'tinny': not a registered model .*huggingface.co cannot be reached"):
            resolve_model("tinny")
        models.hub_unreachable.cache_clear()
        monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")  # a proxy decides: the hub library tries
        assert resolve_model("nobody/no-such-model") == "nobody/no-such-model"
    finally:
        models.hub_unreachable.cache_clear()
