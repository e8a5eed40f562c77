"""The ``hf`` backend on a tiny random Qwen2: exact behaviour log-probs, segments, seeding, top-p, robustness."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import PreTrainedTokenizerFast, Qwen2ForCausalLM

from arena.core.api.backend import ChatMessage, Completion, GenerationRequest, Segment
from arena.core.backends.hf import HFBackend, make_hf_backend, row_key, row_uniforms, sample_tokens
from arena.core.learn.logprobs import recompute_logprobs

STRATEGY = (Segment(temperature=1.2, stop=("</strategy>",), max_new_tokens=6), Segment(temperature=0.7))


@pytest.fixture(scope="module")
def backend(tiny_model: Qwen2ForCausalLM, tiny_tokenizer: PreTrainedTokenizerFast) -> HFBackend:
    return HFBackend(tiny_model, tiny_tokenizer)


def ask(text: str, **kw: Any) -> GenerationRequest:
    return GenerationRequest(messages=(ChatMessage("user", text),), **kw)


def completion_logits(model: Qwen2ForCausalLM, c: Completion) -> torch.Tensor:
    """Logits (no cache, no padding) that predicted each completion token."""
    ids = torch.tensor([list(c.prompt_token_ids) + list(c.token_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    start = len(c.prompt_token_ids) - 1
    return logits[start : start + len(c.token_ids)]


def test_behaviour_logprobs_match_recomputation(backend: HFBackend, tiny_model: Qwen2ForCausalLM) -> None:
    prompts = ["hi", "the strategy is to bluff " * 3, "Legal moves:\n0: left\n1: right\n" * 5, "ok"]
    requests = [ask(p, segments=STRATEGY, max_new_tokens=24, n=2, seed=10 + i) for i, p in enumerate(prompts)]
    out = backend.generate(requests)
    completions = [c for group in out for c in group]
    assert len({len(c.prompt_token_ids) for c in completions}) >= 3  # left padding is exercised
    worst = 0.0
    with torch.no_grad():
        for c in completions:
            assert c.token_ids and len(c.logprobs) == len(c.token_ids) == len(c.temperatures)
            again = recompute_logprobs(tiny_model, c.prompt_token_ids, c.token_ids, c.temperatures)
            worst = max(worst, (again.double() - torch.tensor(c.logprobs, dtype=torch.float64)).abs().max().item())
        batched = recompute_logprobs(
            tiny_model,
            [c.prompt_token_ids for c in completions],
            [c.token_ids for c in completions],
            [c.temperatures for c in completions],
        )
    for row, c in enumerate(completions):
        n = len(c.token_ids)
        assert torch.allclose(batched[row, :n].double(), torch.tensor(c.logprobs, dtype=torch.float64), atol=1e-4)
        assert bool((batched[row, n:] == 0).all())
    print(f"max |delta logprob| = {worst:.2e}")
    assert worst < 1e-4


def test_bf16_behaviour_logprobs_stay_near_the_recomputation(tiny_model: Qwen2ForCausalLM, tiny_tokenizer) -> None:
    """bf16 (the GPU default) on CPU: cached decoding and a full forward round differently, so the two disagree
    by more than in float32 (measured: mean 0.009, max 0.08 on this model), yet stay far
    inside PPO's clip range. A wrong temperature or a misaligned position would be off by tenths or more."""
    model = copy.deepcopy(tiny_model).to(torch.bfloat16)
    backend = HFBackend(model, tiny_tokenizer)
    prompts = ["hi", "the strategy is to bluff " * 3, "Legal moves:\n0: left\n1: right\n" * 5, "ok"]
    requests = [ask(p, segments=STRATEGY, max_new_tokens=24, n=2, seed=10 + i) for i, p in enumerate(prompts)]
    completions = [c for group in backend.generate(requests) for c in group]
    with torch.no_grad():
        again = recompute_logprobs(
            model,
            [c.prompt_token_ids for c in completions],
            [c.token_ids for c in completions],
            [c.temperatures for c in completions],
        )
    gaps = torch.cat(
        [
            (again[row, : len(c.token_ids)].double() - torch.tensor(c.logprobs, dtype=torch.float64)).abs()
            for row, c in enumerate(completions)
        ]
    )
    print(json.dumps({"bf16_logprob_gap_mean": float(gaps.mean()), "bf16_logprob_gap_max": float(gaps.max())}))
    assert len(gaps) > 100
    assert float(gaps.mean()) < 0.03 and float(gaps.max()) < 0.2


def test_temperatures_follow_the_segment_plan(backend: HFBackend) -> None:
    out = backend.generate([ask("plan " * i, segments=STRATEGY, max_new_tokens=12, seed=i) for i in range(4)])
    for (c,) in out:
        first = len(c.token_ids) if "</strategy>" in backend.decode(c.token_ids[:6]) else min(6, len(c.token_ids))
        assert c.temperatures == (1.2,) * first + (0.7,) * (len(c.token_ids) - first)


def _stop_candidate(backend: HFBackend, c: Completion, upto: int) -> tuple[str, int]:
    """A stop string that the text of ``c`` ends with after some token ``<= upto``, and the first such token count."""
    for j in range(upto, 0, -1):
        text = backend.decode(c.token_ids[:j])
        stop = text.rstrip()[-2:]
        if len(stop) == 2 and "\ufffd" not in stop and stop.isprintable():
            first = next(t for t in range(1, j + 1) if backend.decode(c.token_ids[:t]).endswith(stop))
            return stop, first
    pytest.skip("no printable stop candidate in this sample")


def test_stop_string_switches_segment(backend: HFBackend) -> None:
    plain = (Segment(temperature=1.2, max_new_tokens=6), Segment(temperature=0.7))
    (base,) = backend.generate([ask("switch", segments=plain, max_new_tokens=20, seed=3)])[0]
    stop, first = _stop_candidate(backend, base, 4)
    plan = (Segment(temperature=1.2, max_new_tokens=6, stop=(stop,)), Segment(temperature=0.7))
    (c,) = backend.generate([ask("switch", segments=plan, max_new_tokens=20, seed=3)])[0]
    assert c.token_ids[:first] == base.token_ids[:first]
    assert c.temperatures[:first] == (1.2,) * first
    assert set(c.temperatures[first:]) <= {0.7}


def test_stop_string_in_last_segment_ends_completion(backend: HFBackend) -> None:
    (base,) = backend.generate([ask("stop me", max_new_tokens=30, seed=5)])[0]
    stop, first = _stop_candidate(backend, base, 12)
    plan = (Segment(temperature=1.2, max_new_tokens=3), Segment(temperature=1.0, stop=(stop,)))
    (c,) = backend.generate([ask("stop me", max_new_tokens=30, seed=5, segments=(Segment(stop=(stop,)),))])[0]
    assert c.finish_reason == "stop"
    assert c.text.endswith(stop)  # the stop string stays in the text
    assert c.token_ids == base.token_ids[:first]
    (two,) = backend.generate([ask("stop me", max_new_tokens=30, seed=5, segments=plan)])[0]
    assert two.finish_reason in ("stop", "length")
    if two.finish_reason == "stop" and two.token_ids[-1] not in backend.eos_ids:
        assert backend.decode(two.token_ids[3:]).endswith(stop)


def test_max_new_tokens_gives_length(backend: HFBackend) -> None:
    out = backend.generate([ask("long", max_new_tokens=5, seed=s) for s in range(3)])
    for (c,) in out:
        assert len(c.token_ids) <= 5
        if c.token_ids[-1] not in backend.eos_ids:
            assert c.finish_reason == "length" and len(c.token_ids) == 5
    # The last segment's own cap also ends the completion with "length".
    (c,) = backend.generate([ask("cap", segments=(Segment(max_new_tokens=3),), max_new_tokens=50, seed=1)])[0]
    assert len(c.token_ids) <= 3 and (c.finish_reason == "length") == (c.token_ids[-1] not in backend.eos_ids)


def test_n_samples_differ(backend: HFBackend) -> None:
    (group,) = backend.generate([ask("many", n=4, max_new_tokens=8, seed=42)])
    assert len(group) == 4
    assert len({c.token_ids for c in group}) == 4


def test_seeded_request_does_not_depend_on_the_batch(backend: HFBackend) -> None:
    target = ask("the same question", segments=STRATEGY, max_new_tokens=16, seed=99)
    others = [
        ask("a much longer prompt that forces left padding " * 4, max_new_tokens=3, seed=1),
        ask("greedy", segments=(Segment(temperature=0.0),), max_new_tokens=20, seed=2),
        ask("nucleus", segments=(Segment(top_p=0.6),), max_new_tokens=30, seed=3),
    ]
    (alone,) = backend.generate([target])[0]
    batched = backend.generate([others[0], target, others[1], target, others[2]])
    for group in (batched[1], batched[3]):
        (c,) = group
        assert c.token_ids == alone.token_ids
        assert c.temperatures == alone.temperatures
        assert torch.allclose(torch.tensor(c.logprobs), torch.tensor(alone.logprobs), atol=1e-4)
    # Same batch twice: identical to the bit.
    assert backend.generate([others[0], target, others[2]]) == backend.generate([others[0], target, others[2]])


def test_unseeded_requests_are_repeatable_by_position(backend: HFBackend) -> None:
    batch = [ask("no seed", max_new_tokens=8), ask("no seed", max_new_tokens=8)]
    first, second = backend.generate(batch), backend.generate(batch)
    assert first == second
    assert first[0][0].token_ids != first[1][0].token_ids


def test_top_p_samples_stay_in_the_nucleus(backend: HFBackend, tiny_model: Qwen2ForCausalLM) -> None:
    top_p = 0.5
    plan = (Segment(temperature=0.9, top_p=top_p),)
    out = backend.generate([ask(f"nucleus {i}", segments=plan, max_new_tokens=16, seed=i) for i in range(4)])
    checked = 0
    for (c,) in out:
        logits = completion_logits(tiny_model, c)
        probs = torch.softmax(logits.double() / 0.9, dim=-1)
        for t, token in enumerate(c.token_ids):
            p = probs[t]
            # Mass of the strictly more likely tokens must be below top-p (tolerance for float noise).
            more_likely = p[p > p[token] + 1e-7].sum().item()
            assert more_likely < top_p + 1e-4
            sorted_p = p.sort(descending=True).values
            kept = int((sorted_p.cumsum(0) - sorted_p < top_p).sum().item())
            nucleus_mass = sorted_p[:kept].sum().item()
            expected = torch.log(p[token]).item() - float(torch.log(torch.tensor(nucleus_mass)))
            assert c.logprobs[t] == pytest.approx(expected, abs=1e-4)
            assert c.logprobs[t] <= 1e-6
            checked += 1
    assert checked >= 40


def test_greedy_equals_argmax_loop(backend: HFBackend, tiny_model: Qwen2ForCausalLM) -> None:
    greedy = (Segment(temperature=0.0),)
    prompts = ["greedy one", "a longer greedy prompt to pad the other one " * 2]
    out = backend.generate([ask(p, segments=greedy, max_new_tokens=12) for p in prompts])
    for (c,) in out:
        ids = list(c.prompt_token_ids)
        expected: list[int] = []
        with torch.no_grad():
            for _ in range(12):
                token = int(tiny_model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
                expected.append(token)
                ids.append(token)
                if token in backend.eos_ids:
                    break
        assert list(c.token_ids) == expected
        assert c.temperatures == (0.0,) * len(expected)
        with torch.no_grad():
            again = recompute_logprobs(tiny_model, c.prompt_token_ids, c.token_ids, c.temperatures)
        assert torch.allclose(again.double(), torch.tensor(c.logprobs, dtype=torch.float64), atol=1e-4)


def test_odd_inputs_and_outputs_never_raise(
    backend: HFBackend, tiny_model: Qwen2ForCausalLM, tiny_tokenizer: PreTrainedTokenizerFast
) -> None:
    requests = [
        GenerationRequest(prompt_token_ids=()),  # nothing at all
        ask("", max_new_tokens=1),
        GenerationRequest(prompt_token_ids=(tiny_tokenizer.eos_token_id,), max_new_tokens=4, seed=0),
        ask("東京 🎲", segments=(Segment(temperature=3.0, stop=("東", "\ufffd")),), max_new_tokens=40, seed=4),
        ask("bytes", segments=(Segment(temperature=5.0),), max_new_tokens=40, n=3, seed=8),
    ]
    out = backend.generate(requests)
    assert [len(g) for g in out] == [1, 1, 1, 1, 3]
    for group in out:
        for c in group:
            assert isinstance(c.text, str) and c.prompt_token_ids
            assert c.finish_reason in ("stop", "length")
    assert out[1][0].finish_reason == "length" or out[1][0].token_ids[-1] in backend.eos_ids
    # Lone UTF-8 continuation / lead bytes decode with replacement characters.
    byte_tokens = [tiny_tokenizer.convert_tokens_to_ids(ch) for ch in ("Ģ", "ł", "ń")]  # 0x80-ish byte symbols
    assert isinstance(backend.decode(byte_tokens), str)
    assert backend.generate([]) == []
    # No chat template: contents joined with newlines.
    plain = copy.deepcopy(tiny_tokenizer)
    plain.chat_template = None
    no_template = HFBackend(tiny_model, plain)
    request = GenerationRequest(messages=(ChatMessage("system", "a"), ChatMessage("user", "b")), max_new_tokens=2)
    (c,) = no_template.generate([request])[0]
    assert list(c.prompt_token_ids) == plain("a\nb")["input_ids"]


def test_sampling_primitives() -> None:
    mask = (1 << 64) - 1

    def splitmix(state: int) -> int:
        z = state & mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    seeds = [0, 1, 12345, (1 << 63) - 1]
    keys = torch.tensor([row_key(s) for s in seeds], dtype=torch.int64)
    for step in (0, 7):
        u = row_uniforms(keys, step)
        for s, value in zip(seeds, u.tolist(), strict=True):
            expected = splitmix((splitmix(s) + (step + 1) * 0x9E3779B97F4A7C15) & mask) >> 11
            assert value == expected / 2**53
    # Inverse CDF with a point mass at the start, and a uniform at the very top of [0, 1).
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0], [10.0, -1e9, -1e9, -1e9]])
    tokens, logprobs = sample_tokens(
        logits, torch.tensor([1.0, 1.0]), torch.tensor([1.0, 0.3]), torch.tensor([0.999999, 0.5], dtype=torch.float64)
    )
    assert tokens.tolist() == [3, 0]
    assert logprobs[1].item() == pytest.approx(0.0, abs=1e-6)


def test_factory_loads_a_saved_model(
    tmp_path: Path, tiny_model: Qwen2ForCausalLM, tiny_tokenizer: PreTrainedTokenizerFast, backend: HFBackend
) -> None:
    tiny_model.save_pretrained(tmp_path)
    tiny_tokenizer.save_pretrained(tmp_path)
    loaded = make_hf_backend(str(tmp_path), device="cpu")
    assert loaded.name == "hf" and loaded.model.dtype == torch.float32 and not loaded.model.training
    loaded.sync_weights()
    request = ask("load", segments=(Segment(temperature=0.8),), max_new_tokens=8, seed=1)
    assert loaded.generate([request])[0][0].token_ids == backend.generate([request])[0][0].token_ids
