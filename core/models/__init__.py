"""Named models that need no download (``model:tiny``, ``model:smollm2-135m-instruct``) and how specs resolve.

Plugins register models through ``register_models(register)`` with
``register(name, resolver, default_backend="hf", description="", info=callable)``: ``resolver()`` returns a
local directory (building or caching the model first when needed) that ``transformers`` and vLLM load, and the
optional ``info()`` returns a dict for ``arena models`` (parameters, where cached, whether built).
"""

from __future__ import annotations

from arena.core import catalog


def resolve_model(name: str) -> str:
    """A local directory or hub id for ``name``: registered names resolve (and build) through their plugin."""
    models = catalog.models()
    if name in models:
        return str(models.get(name).factory())
    return name
