"""Named models that need no download (``model:tiny``, ``model:smollm2-135m-instruct``) and how specs resolve.

Plugins register models through ``register_models(register)`` with
``register(name, resolver, default_backend="hf", description="", info=callable)``: ``resolver()`` returns a
local directory (building or caching the model first when needed) that ``transformers`` and vLLM load, and the
optional ``info()`` returns a dict for ``arena models`` (parameters, where cached, whether built).

Anything else is a local directory or a Hugging Face model id. A name that can only be a path (``./x``,
``/abs``, ``runs/a/b``) and does not exist is one clear error, and so is a hub id when the hub is offline
(``HF_HUB_OFFLINE=1`` or ``TRANSFORMERS_OFFLINE=1``) and the id is not in the local Hugging Face cache: no
connection is attempted for them.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from arena.core.api.errors import ArenaError
from arena.core.host import catalog

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def hub_offline() -> bool:
    """Whether no connection to the Hugging Face hub may be tried (its own environment switches)."""
    switches = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in switches)


def _in_hub_cache(repo_id: str) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    except Exception:  # an id the hub library refuses is not in its cache either
        return False


def resolve_model(name: str) -> str:
    """A local directory or hub id for ``name``: registered names resolve (and build) through their plugin."""
    models = catalog.models()
    if name in models:
        return str(models.get(name).factory())
    if Path(name).expanduser().exists():
        return name
    registered = ", ".join(sorted(models.names())) or "none"
    if not _HUB_ID.match(name) or ".." in name:
        raise ArenaError(
            f"unknown model {name!r}: no such directory, and not a registered model ({registered}) or a "
            "Hugging Face model id"
        )
    if hub_offline() and not _in_hub_cache(name):
        raise ArenaError(
            f"unknown model {name!r}: not a registered model ({registered}), no such directory, and not in the "
            "local Hugging Face cache (the hub is offline: HF_HUB_OFFLINE/TRANSFORMERS_OFFLINE)"
        )
    return name
