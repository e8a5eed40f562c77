"""Seeds derived from names, so that what a trial draws never depends on what else runs beside it."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A stable 63-bit seed from any printable parts (``derive_seed(7, "game-3", "seat", 1)``)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)
