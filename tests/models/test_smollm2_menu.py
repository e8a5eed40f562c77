"""``smollm2-menu`` (core/models/smol/menu.py): the prompts it learns from, what its SFT rows teach, and the exact
tempered measurement, checked against the model's own likelihood. The build itself (about 9 minutes) is measured
in docs/results.md, not here."""

from __future__ import annotations

import math
import random

import pytest

from arena.arenas.menu import menu_of, read_answer
from arena.core.api.errors import ArenaError
from arena.core.models import smollm2
from arena.core.models.smol.menu import (
    NEGATIVE,
    MenuPrompt,
    MenuRecipe,
    answer,
    build_smollm2_menu,
    collect_menu_prompts,
    encode,
    measure,
    smollm2_menu_info,
    tempered_logprobs,
    training_row,
)


@pytest.fixture(scope="module")
def prompts() -> list[MenuPrompt]:
    return collect_menu_prompts(range(4))


def test_the_canonical_answer_wins_with_the_paying_plan() -> None:
    menu = menu_of(3)
    read = read_answer(answer(menu.paying_name, menu.paying_code), menu)
    assert read.named == (menu.paying,) and read.code == menu.paying_code and read.closed_first


def test_prompts_come_from_both_configs_and_the_reflection_names_a_failed_plan(prompts: list[MenuPrompt]) -> None:
    kinds = sorted({p.config for p in prompts})
    assert kinds == sorted(["menu_grpo", "menu_sge", NEGATIVE])
    for prompt in prompts:
        text = prompt.messages[-1].content
        assert f"Menu {prompt.menu}: 5 plans." in text
        if prompt.config == NEGATIVE:
            menu = menu_of(prompt.menu)
            assert prompt.failed_plan in menu.names and prompt.failed_plan != menu.paying_name
            assert f"Plan {prompt.failed_plan} failed: it is not the plan that pays" in text
            assert "An earlier attempt at this task failed" in text
        else:
            assert prompt.failed_plan is None and "failed" not in text
    # SGE's prompt adds its strategy instruction; the arena's does not.
    sge = next(p for p in prompts if p.config == "menu_sge").messages[-1].content
    grpo = next(p for p in prompts if p.config == "menu_grpo").messages[-1].content
    assert "First write a short strategy" in sge and "First write a short strategy" not in grpo


def test_a_plain_row_learns_everything_but_the_name(tokenizer, prompts: list[MenuPrompt]) -> None:  # type: ignore[no-untyped-def]
    prompt = next(p for p in prompts if p.config == "menu_sge")
    menu = menu_of(prompt.menu)
    ids, labels = encode(tokenizer, prompt, menu.names[1], menu.codes[1], mask_name=True)
    learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != -100])
    assert menu.names[1] not in learned and menu.codes[1] in learned
    assert learned.startswith("<strategy>Plan</strategy>")
    full = tokenizer.decode(ids)
    assert full.endswith(answer(menu.names[1], menu.codes[1]) + tokenizer.eos_token)
    _, unmasked = encode(tokenizer, prompt, menu.names[1], menu.codes[1], mask_name=False)
    assert tokenizer.decode([t for t, label in zip(ids, unmasked, strict=True) if label != -100]).startswith(
        f"<strategy>Plan {menu.names[1]}</strategy>"
    )


def test_rows_after_a_reflection_name_another_plan_and_learn_the_name(tokenizer, prompts: list[MenuPrompt]) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    for prompt in (p for p in prompts if p.config == NEGATIVE):
        menu = menu_of(prompt.menu)
        first = next(i for i, n in enumerate(menu.names) if n != prompt.failed_plan)
        seen = set()
        for choice in ("first", "uniform"):
            for _ in range(20):
                ids, labels = training_row(tokenizer, prompt, rng, choice)
                learned = tokenizer.decode([t for t, label in zip(ids, labels, strict=True) if label != -100])
                named = read_answer(learned, menu).named
                assert len(named) == 1 and menu.names[named[0]] != prompt.failed_plan
                if choice == "first":
                    assert named == (first,)  # the first listed plan that did not fail
                else:
                    seen.add(named[0])
        assert len(seen) > 1  # uniform: more than one other plan over 20 draws


def test_tempered_logprobs_at_t1_is_the_models_likelihood(tokenizer, prompts: list[MenuPrompt]) -> None:  # type: ignore[no-untyped-def]
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4
    )
    model = LlamaForCausalLM(config).eval()
    prompt = prompts[0]
    menu = menu_of(prompt.menu)
    parts = tempered_logprobs(model, tokenizer, prompt, menu.names[0], menu.codes[0])
    ids, labels = encode(tokenizer, prompt, menu.names[0], menu.codes[0], mask_name=False)
    labels[-1] = -100  # the answer without its end-of-sequence, as measured
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
    answered = sum(label != -100 for label in labels)
    assert parts["strategy"][1.0] + parts["code"][1.0] == pytest.approx(-float(out.loss) * answered, rel=1e-4)
    # Heating flattens: a random model's answer gets likelier at T 1.2 than at 0.7.
    assert parts["strategy"][1.2] > parts["strategy"][0.7]
    result = measure(model, tokenizer, [p for p in prompts if p.menu < 2])
    for entry in result.values():
        assert all(0.0 <= v <= 1.0 for v in entry["plan_mass"].values())
        grpo, sge = entry["arms"]["grpo"]["per_menu"], entry["arms"]["sge"]["per_menu"]
        assert len(grpo) == len(sge) == entry["menus"] == 2
    assert 0.0 <= result[NEGATIVE]["failed_share"] <= 1.0


def test_only_the_default_recipe_fills_the_cache_and_info_builds_nothing(model_cache: None) -> None:
    with pytest.raises(ArenaError, match="only the default recipe"):
        build_smollm2_menu(recipe=MenuRecipe(steps=1))
    info = smollm2_menu_info()
    assert info["base"] == smollm2.NAME and "path" in info
    assert math.isfinite(MenuRecipe().lr)
