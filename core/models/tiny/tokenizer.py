"""The ``tiny`` model's tokenizer: a byte-level BPE trained on the demonstration text, with a chat template.

Byte-level, so any text (a move name with ``×``, a user's note) encodes without unknown tokens; trained on the
arena prompts themselves, so a few thousand merges cover the rules, boards and move lists compactly and every
prompt stays within a few hundred tokens. The chat template is a plain role-tag format::

    <|system|>\\n{content}<|end|>\\n<|user|>\\n{content}<|end|>\\n<|assistant|>\\n{answer}<|end|>

``<|end|>`` is both the end-of-sequence and the padding token.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

END = "<|end|>"
ROLE_TOKENS: tuple[str, ...] = ("<|system|>", "<|user|>", "<|assistant|>")
SPECIAL_TOKENS: tuple[str, ...] = (END, *ROLE_TOKENS)

#: Pre-token boundaries: newlines, ``<tag>``/``</tag>`` markup and the ``ID: `` of move listings stay apart;
#: everything else (spaces, punctuation, digits) may merge, so the constant rule text compresses well and a move
#: name such as ``(0,1)`` or ``bid 2 × 6`` becomes one token, the same in the listing and in ``<action>…</action>``:
#: answering is then copying one token from the list. (Tried and dropped: whole listing lines as one token each;
#: the model learned the line → name association no faster.)
_SPLIT = r"\n+|</?[A-Za-z_|]+>|\d+: "
#: The same, but ``ID: `` splits off only at a line start (``^`` matches at every line start in Oniguruma), so an
#: opponent's history line (``player_1: (0,2)``) does not look like a listing line. The seeded copy circuit
#: (``arena.core.models.tiny.circuit``) relies on ``ID: `` tokens marking the listing only.
_SPLIT_LINE_START = r"\n+|</?[A-Za-z_|]+>|^\d+: "

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|assistant|>\\n' }}{%- endif -%}"
)


def train_tokenizer(
    texts: Iterable[str], vocab_size: int = 4096, max_token_length: int = 24, listing_ids_at_line_start: bool = False
) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts`` (deterministic for equal input) and wrap it for ``transformers``."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(
                Regex(_SPLIT_LINE_START if listing_ids_at_line_start else _SPLIT), behavior="isolated"
            ),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=max_token_length,
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token=END,
        pad_token=END,
        additional_special_tokens=list(ROLE_TOKENS),
        chat_template=CHAT_TEMPLATE,
        model_max_length=4096,
        padding_side="left",
        clean_up_tokenization_spaces=False,
    )
    return wrapped


def save_tokenizer(tokenizer: PreTrainedTokenizerFast, out: Path) -> None:
    """Save, naming the generic fast class so ``AutoTokenizer`` loads ``tokenizer.json`` exactly as trained.

    Without it, transformers 5 picks a model-specific class for some model types (``qwen2`` among them) and
    rebuilds the pre-tokenizer with that model's regex, silently changing every token id.
    """
    tokenizer.save_pretrained(out)
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
