"""The generation backend protocol: a batch of requests in, sampled completions with log-probs out.

Every backend (``scripted`` here; ``hf`` and ``vllm`` as they land) implements ``Backend.generate``. The rollout
engine calls it once per tick with every pending request of every live trial, so a backend should batch them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen
class ChatMessage:
    role: str
    content: str


@attrs.frozen
class Segment:
    """One stretch of a completion sampled with its own settings.

    A segment ends when its text ends with one of ``stop`` (the stop string is kept) or after
    ``max_new_tokens`` tokens; the next segment then continues the same completion. The last segment runs
    until the request's ``max_new_tokens`` or the end-of-sequence token. SGE uses two: the strategy at
    T = 1.2 until ``</strategy>``, then the rest at T = 0.7.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    max_new_tokens: int | None = None


@attrs.frozen
class GenerationRequest:
    """A prompt (chat messages or token ids) and how to sample from it.

    ``stop`` ends the whole completion (on top of the last segment's stop strings); ``seed`` makes the
    sampling of this request repeatable independently of what else is in the batch, where the backend can.
    ``purpose`` says what the text is for ("action", "reflection", "tip", ...), for logs and metrics.
    """

    messages: tuple[ChatMessage, ...] = ()
    prompt_token_ids: tuple[int, ...] | None = None
    segments: tuple[Segment, ...] = (Segment(),)
    max_new_tokens: int = 256
    n: int = 1
    seed: int | None = None
    purpose: str = "action"

    def __attrs_post_init__(self) -> None:
        if not self.messages and self.prompt_token_ids is None:
            raise ValueError("a GenerationRequest needs messages or prompt_token_ids")
        if not self.segments:
            raise ValueError("a GenerationRequest needs at least one segment")
        if self.n < 1 or self.max_new_tokens < 1:
            raise ValueError("n and max_new_tokens must be positive")


@attrs.frozen
class Completion:
    """One sampled continuation.

    ``logprobs[i]`` is the behaviour log-prob of ``token_ids[i]`` under the distribution it was sampled from
    (logits divided by ``temperatures[i]``, after top-p); the trainer recomputes with the same temperatures.
    """

    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    temperatures: tuple[float, ...]
    prompt_token_ids: tuple[int, ...] = ()
    finish_reason: str = "stop"


@runtime_checkable
class Backend(Protocol):
    """Turns a batch of requests into ``request.n`` completions each, in request order."""

    name: str

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]: ...
