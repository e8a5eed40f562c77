"""The ``tiny`` model: bit-for-bit reproducible builds, a loadable directory, and legal answers on fresh prompts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arena.core.models.tiny import build as tiny
from arena.core.models.tiny.recipe import DemoCounts


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name not in tiny.NONDETERMINISTIC_FILES
    }


def test_two_quick_builds_with_the_same_seed_are_byte_identical(tmp_path: Path) -> None:
    first = tiny.build_tiny(tmp_path / "a", seed=3, quick=True, steps=3)
    second = tiny.build_tiny(tmp_path / "b", seed=3, quick=True, steps=3)
    a, b = _files(first), _files(second)
    assert {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json"} <= set(a)
    assert sorted(a) == sorted(b)
    for name in a:
        assert a[name] == b[name], f"{name} differs between two builds with the same seed"
    other = tiny.build_tiny(tmp_path / "c", seed=4, quick=True, steps=3)
    assert _files(other)["model.safetensors"] != a["model.safetensors"]


def test_quick_build_loads_with_plain_transformers_and_chats(tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny.build_tiny(tmp_path / "m", seed=0, quick=True, steps=2)
    assert not list(tmp_path.glob(".*.tmp")), "the temporary build directory must be renamed away"
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["hidden_size"] // config["num_attention_heads"] >= 64
    from safetensors import safe_open

    with safe_open(str(path / "model.safetensors"), "pt") as f:
        assert "model.embed_tokens.weight" in set(f.keys())
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "Legal moves:\n0: Pass\n1: Bet"}], add_generation_prompt=True, tokenize=False
    )
    assert text.endswith("<|assistant|>\n")
    ids = tokenizer.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True)
    ids = ids["input_ids"] if hasattr(ids, "keys") else ids
    assert tokenizer.eos_token == "<|end|>" and tokenizer.eos_token_id == model.config.eos_token_id
    assert model(input_ids=__import__("torch").tensor([ids])).logits.shape[-1] == model.config.vocab_size
    report = json.loads((path / "build_report.json").read_text())
    assert report["build_version"] == tiny.BUILD_VERSION and report["gate"]["enforced"] is False


def test_building_twice_reuses_the_cache(tmp_path: Path) -> None:
    path = tiny.build_tiny(tmp_path / "m", quick=True, steps=1)
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert tiny.build_tiny(tmp_path / "m", quick=True, steps=1) == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp


@pytest.mark.slow
def test_real_tiny_answers_legal_moves_on_fresh_prompts(model_cache: None) -> None:
    """Resolve the real model (built once into the user's default cache), then sample on never-seen prompts.

    The target is 95% legal answers; v4 measured 0.986 overall on these prompts, every arena at 0.967 or more
    (docs/models.md). Then RL-sized steps (``format_probe``): with the build's held weights kept, as the trainer
    keeps them, they must not push the first answer token off the format (v3 free: one step at lr 1e-4 took
    P(``<strategy>``) from 0.000 to 0.999; v4 held: 0.0008 after four, v3 held 0.041), while they still move the
    choice among legal moves (v4: 0.38 → 0.49 after four).
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from arena.core.models import resolve_model
    from arena.core.models.tiny.demos import build_demos
    from arena.core.models.tiny.quality import evaluate

    path = Path(resolve_model("tiny"))
    assert path == tiny.tiny_dir() and tiny.is_built()
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    fresh = build_demos(
        seed=424242, counts=DemoCounts(action=20, reflection=3, strategy=5, tip=3, tip_action=5, trials=40)
    )
    report = evaluate(model, tokenizer, fresh, seed=7)
    assert set(report) == {
        "kuhn_poker",
        "leduc_poker",
        "tic_tac_toe",
        "connect_four",
        "liars_dice",
        "rock_paper_scissors",
        "text_maze",
    }
    total = sum(row["legal_samples"] for row in report.values())
    legal = sum(row["legal_rate"] * row["legal_samples"] for row in report.values())
    assert legal / total >= tiny.GATE_LEGAL_RATE, {a: row["legal_rate"] for a, row in report.items()}
    for arena, row in report.items():
        assert row["legal_rate"] >= 0.9, (arena, row["legal_rate"])
        assert row["choice_entropy"] > 0.8, (arena, row["choice_entropy"])  # choices stay spread, not collapsed
        assert row["distinct_choices"] >= 2, arena
    # In bfloat16, the hf backend's default on a GPU, the copy circuit and the formats survive the rounding
    # (measured on CPU, the build's 468 held-out prompts: the same legal rates as float32, 0.975 to 1.0).
    import copy

    import torch

    half = evaluate(copy.deepcopy(model).to(torch.bfloat16), tokenizer, fresh, seed=7)
    legal_bf16 = sum(row["legal_rate"] * row["legal_samples"] for row in half.values())
    print(json.dumps({"legal_rate": legal / total, "legal_rate_bf16": legal_bf16 / total}))
    assert legal_bf16 / total >= tiny.GATE_LEGAL_RATE, {a: row["legal_rate"] for a, row in half.items()}
    built = json.loads((path / "build_report.json").read_text())
    assert built["gate"]["threshold"] == tiny.GATE_LEGAL_RATE
    assert built["gate"]["passed"] == (built["gate"]["min_legal_rate"] >= tiny.GATE_LEGAL_RATE)

    from arena.core.models.held import load_held
    from arena.core.models.tiny.probe import format_probe

    counts = DemoCounts(action=12, reflection=0, strategy=0, tip=0, tip_action=0, crops=0, trials=24)
    probed = build_demos(424242, counts, arenas=("kuhn_poker", "tic_tac_toe"))
    probe = format_probe(model, tokenizer, probed, held=load_held(path), steps=4, lr=1e-4)
    # The off-format share after 1 and 4 probe steps depends on the machine the tiny v4 was built on (the build is
    # deterministic on one machine, not across CPUs): one build gave 0.015-0.017 after one step and < 0.05 after
    # four; another (2026-12-02, the same weights from 07aa53a's code and from the redesign, sha256 d42fe9a7...)
    # gives 0.0047 and 0.083, identically at both commits. So the bounds cover both builds: formats survive one
    # step (< 0.02) and four steps leave over 90% of answers in format; the legal-move gain below is the point.
    assert probe["off_format"][1] < 0.02 and probe["off_format"][4] < 0.10, probe
    assert probe["legal_move"][4] > probe["legal_move"][0] + 0.05, probe


def test_coding_demonstrations_pair_the_reference_with_one_plausible_bug() -> None:
    """Not part of the tiny build (a model this size learns no Python from them), but available to bigger
    recipes: each coding prompt is trained on its reference solution and on one mutant of it."""
    import ast

    import numpy as np

    from arena.core.models.tiny.demos import build_demos, coding_reference, mutant

    demos = build_demos(
        3, DemoCounts(action=3, reflection=0, strategy=1, tip=0, tip_action=0, crops=0, trials=4), arenas=("coding",)
    )
    assert {d.kind for d in demos} == {"action", "strategy"}
    for demo in demos:
        reference = coding_reference(demo.messages[-1].content)
        assert reference in demo.answers[0] and 1 <= len(demo.answers) <= 2
        for answer in demo.answers:
            ast.parse(answer.split("```python\n", 1)[1].rsplit("```", 1)[0])  # every answer is valid Python
        if len(demo.answers) == 2:
            assert demo.answers[0] != demo.answers[1]
    assert mutant("def f(x):\n    return x + 1 if x < 3 else 0", np.random.default_rng(0)) != (
        "def f(x):\n    return x + 1 if x < 3 else 0"
    )
    assert mutant("def f(x):\n    pass", np.random.default_rng(0)) is None


@pytest.mark.slow
def test_real_tiny_writes_mage_reflections_as_remarks(
    model_cache: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MAGE's reflection turns through the real engine: the extracted content is a remark, not a tag soup.

    v3, never shown MAGE's reflection prompt, wrote 0 of 400 in form (``<strategy>…</tip>``); v4 400 of 400.
    """
    from arena.core.cli.main import main

    dump = tmp_path / "trials.jsonl"
    args = ["play", "kuhn_poker", "--seat", "model:tiny", "--seat", "aggressive", "--games", "40"]
    assert main([*args, "--episodes", "3", "--plugin", "mage", "--seed", "5", "--dump", str(dump), "--json"]) == 0
    capsys.readouterr()
    remarks = [r["content"] for line in dump.read_text().splitlines() for r in json.loads(line)["reflections"]]
    assert len(remarks) == 80  # two reflections per trial: every episode is played in `arena play`
    # ``extract_tag="remark"``: a closed <remark> leaves plain text; anything else comes back with its tags.
    in_form = [r for r in remarks if not r.lstrip().startswith("<") and " played " in r]
    assert len(in_form) >= 0.9 * len(remarks), remarks[:5]
