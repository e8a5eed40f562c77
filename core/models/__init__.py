"""Named models that need no download (``model:tiny``, ``model:smollm2-135m-instruct``) and how specs resolve.

Plugins register models through ``register_models(register)`` with
``register(name, resolver, default_backend="hf", description="", info=callable)``: ``resolver()`` returns a
local directory (building or caching the model first when needed) that ``transformers`` and vLLM load, and the
optional ``info()`` returns a dict for ``arena models`` (parameters, where cached, whether built).

Anything else is a local directory or a Hugging Face model id. A name that can only be a path (``./x``,
``/abs``, ``runs/a/b``) and does not exist is one clear error, and so is a hub id that is not in the local
Hugging Face cache when the hub is offline: switched off (``HF_HUB_OFFLINE=1`` or ``TRANSFORMERS_OFFLINE=1``), or
unreachable (one TCP connection to the hub's host, 3 s at most, unless a proxy is configured). Without that
probe a typo such as ``tinny`` on a machine without the hub spends a minute in the hub library's retries before
it says "couldn't connect".
"""

from __future__ import annotations

import functools
import os
import re
import socket
from pathlib import Path
from urllib.parse import urlparse

from arena.core.api.errors import ArenaError
from arena.core.host import catalog

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def hub_offline() -> bool:
    """Whether no connection to the Hugging Face hub may be tried (its own environment switches)."""
    switches = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in switches)


_PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


@functools.cache
def hub_unreachable() -> str | None:
    """Why the hub cannot be reached from here (``None`` if it can, or if a proxy decides that for us)."""
    if any(os.environ.get(v) for v in _PROXIES):
        return None
    host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
    try:
        socket.create_connection((host, 443), timeout=3).close()
    except OSError as exc:
        return f"{host} cannot be reached from here ({type(exc).__name__})"
    return None


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
    if not _in_hub_cache(name) and (why := hub_unreachable()) is not None:
        raise ArenaError(
            f"unknown model {name!r}: not a registered model ({registered}), no such directory, and not in the "
            f"local Hugging Face cache (the hub is offline: {why})"
        )
    return name
