"""The ``scripted`` backend: a deterministic stand-in for an LLM, for tests and demos.

It answers every request with a *responder* — a function of the request and a seeded RNG. The default
responder plays a uniformly random legal move from the prompt's move list (``<action>NAME</action>``) and
writes a short ``<remark>`` for reflection requests. Tokens are the UTF-8 bytes of the answer, each with
log-prob 0 at its segment's temperature (a segment ends on one of its stop strings or at its budget, as in
the real backends): enough to exercise everything downstream of generation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from arena.core.api.backend import Completion, GenerationRequest, Segment, reject_guided

Responder = Callable[[GenerationRequest, np.random.Generator], str]

MOVES_HEADER = "Legal moves:"
_MOVE_LINE = re.compile(r"^\s*(\d+):\s*(.+?)\s*$")


def listed_moves(text: str) -> list[tuple[int, str]]:
    """The (id, name) lines under the last ``Legal moves:`` header of ``text``, in listing order."""
    start = text.rfind(MOVES_HEADER)
    if start < 0:
        return []
    moves: list[tuple[int, str]] = []
    for line in text[start + len(MOVES_HEADER) :].splitlines()[1:]:
        match = _MOVE_LINE.match(line)
        if not match:
            break
        moves.append((int(match.group(1)), match.group(2)))
    return moves


def legal_moves_in_prompt(request: GenerationRequest) -> list[str]:
    """Move names listed under the engine's ``Legal moves:`` header of the last message."""
    if not request.messages:
        return []
    return [name for _, name in listed_moves(request.messages[-1].content)]


def random_legal_responder(request: GenerationRequest, rng: np.random.Generator) -> str:
    if request.purpose == "action":
        moves = legal_moves_in_prompt(request)
        if not moves:
            return "I see no legal move."
        choice = moves[int(rng.integers(len(moves)))]
        return f"I pick one of the legal moves.\n<action>{choice}</action>"
    return f"<remark>Scripted reflection {int(rng.integers(1000))}: try something different next time.</remark>"


def segment_temperatures(token_ids: Sequence[int], segments: Sequence[Segment]) -> tuple[float, ...]:
    """Each token's temperature under the request's segment plan (a segment ends on a stop string or its budget)."""
    temps: list[float] = []
    index, start = 0, 0
    for k in range(len(token_ids)):
        segment = segments[index]
        temps.append(float(segment.temperature))
        if index == len(segments) - 1:
            continue
        text = bytes(token_ids[start : k + 1]).decode("utf-8", errors="replace")
        if any(text.endswith(stop) for stop in segment.stop) or (
            segment.max_new_tokens is not None and k + 1 - start >= segment.max_new_tokens
        ):
            index, start = index + 1, k + 1
    return tuple(temps)


class ScriptedBackend:
    """Deterministic: request ``seed`` (else its position in the batch) seeds each answer."""

    name = "scripted"

    def __init__(self, model: str = "scripted", responder: Responder | None = None) -> None:
        self.model = model
        self.responder = responder or random_legal_responder
        self.batch_sizes: list[int] = []

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]:
        # Its log-probs are placeholders (0), so it cannot honestly report a mixture's log-probs: refuse guides.
        reject_guided(requests, self.name)
        self.batch_sizes.append(len(requests))
        out: list[list[Completion]] = []
        for position, request in enumerate(requests):
            seed = request.seed if request.seed is not None else position
            rng = np.random.default_rng(seed)
            completions = []
            for _ in range(request.n):
                text = self.responder(request, rng)
                # Tokens are UTF-8 bytes, cut at the budget like a real model's answer; a cut through a character
                # or a lone surrogate from the responder becomes U+FFFD rather than an exception.
                token_ids = tuple(text.encode("utf-8", errors="surrogatepass"))[: request.max_new_tokens]
                text = bytes(token_ids).decode("utf-8", errors="replace")
                finish = "length" if len(token_ids) >= request.max_new_tokens else "stop"
                completions.append(
                    Completion(
                        text=text,
                        token_ids=token_ids,
                        logprobs=(0.0,) * len(token_ids),
                        temperatures=segment_temperatures(token_ids, request.segments),
                        finish_reason=finish,
                    )
                )
            out.append(completions)
        return out
