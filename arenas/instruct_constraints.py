"""Checkable constraints for the ``instruct`` arena, in the style of IFEval and IFBench.

A ``Constraint`` is one rubric: a plain-English ``description`` shown to the model and a deterministic checker
(``Constraint.check(response)``). Every kind lives in ``KINDS`` with its checker, its description template and the
kinds it may not be combined with (``CONFLICTS``: contradictory pairs such as lowercase and uppercase, or pairs
whose checkers would fight, such as JSON output and bullet lines). Nothing here is random: the task generator in
``arena.arenas.instruct`` draws the parameters.

Counting rules (the same for the model's answer and for the generator's reference answers):

- a *word* is a run of letters and digits, with inner apostrophes (``don't`` is one word, ``well-known`` two);
- a *sentence* is a piece of a line that ends at ``.``, ``!`` or ``?`` followed by a space, a closing quote or
  bracket (or at the end of the line) and holds a letter or digit (so ``3.5`` does not end one); section
  headers, titles in ``<<…>>``, ``***`` separators and the ``P.S.`` marker are not sentences;
- an answer without a letter or digit meets no constraint (so an empty answer scores 0);
- keywords match whole words, case-insensitively; start and end phrases compare case-insensitively.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

__all__ = [
    "CONFLICTS",
    "KINDS",
    "Constraint",
    "ConstraintKind",
    "compatible",
    "count_keyword",
    "count_sentences",
    "count_words",
    "describe",
    "parse_json_answer",
]

_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z0-9]+)*")
_HAS_WORD = re.compile(r"[A-Za-z0-9]")
_SENTENCE_END = re.compile(r"[.!?]+(?=[\s\"'’”)\]]|$)")
_PS_MARK = re.compile(r"\bP\.\s?S\.", re.IGNORECASE)
_HEADER = re.compile(r"^\s*SECTION\s+(\d+)\b")
_TITLE = re.compile(r"<<([^<>\n]*)>>")
_SEPARATOR_LINE = re.compile(r"^\s*\*{3,}\s*$")
_BULLET = re.compile(r"^\s*[*-]\s+\S")
_PARAGRAPH_SPLIT = re.compile(r"\s*\*{3}\s*")
_POSTSCRIPT = re.compile(r"^[ \t\"']*P\.\s?S\.[ \t]*\S", re.IGNORECASE | re.MULTILINE)
_PLACEHOLDER = re.compile(r"\[([^\[\]\n]*)\]")
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


@attrs.frozen
class Constraint:
    """One rubric. ``n``, ``words`` and ``phrase`` are the parameters its kind uses (the others stay empty)."""

    kind: str
    n: int = 0
    words: tuple[str, ...] = ()
    phrase: str = ""

    @property
    def description(self) -> str:
        return describe(self)

    def check(self, response: str) -> bool:
        """True when ``response`` (already stripped of surrounding whitespace) satisfies the constraint; an answer
        without a single letter or digit satisfies none."""
        if not _HAS_WORD.search(response):
            return False
        return bool(KINDS[self.kind].check(response, self))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "n": self.n, "words": list(self.words), "phrase": self.phrase}


@attrs.frozen
class ConstraintKind:
    """A kind of constraint: its checker, its description template (``str.format`` with ``n``, ``words`` as a
    quoted list, ``word`` (the first word) and ``phrase``) and a short summary for the docs table."""

    name: str
    check: Callable[[str, Constraint], bool]
    template: str
    summary: str


# ------------------------------------------------------------------------------------------------- counting


def count_words(text: str) -> int:
    return len(_WORD.findall(text))


def _sentence_lines(text: str) -> list[str]:
    lines = []
    for line in _PS_MARK.sub(" ", text).splitlines():
        if _HEADER.match(line) and not _HAS_WORD.search(_HEADER.sub("", line)):
            continue
        line = _TITLE.sub(" ", line)
        if _SEPARATOR_LINE.match(line):
            continue
        lines.append(line)
    return lines


def count_sentences(text: str) -> int:
    """Pieces of lines ending at ``.``/``!``/``?`` before a space, a closing quote or bracket, or the line's end, that
    hold a letter or digit."""
    return sum(1 for line in _sentence_lines(text) for piece in _SENTENCE_END.split(line) if _HAS_WORD.search(piece))


def _keyword_pattern(word: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(word)}(?![A-Za-z0-9])", re.IGNORECASE)


def count_keyword(text: str, word: str) -> int:
    """Whole-word, case-insensitive occurrences of ``word``."""
    return len(_keyword_pattern(word).findall(text))


def parse_json_answer(text: str) -> Any:
    """The JSON value of an answer (a surrounding ``` fence is allowed); raises ``ValueError`` when it is not JSON."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    return json.loads(stripped)


# ------------------------------------------------------------------------------------------------- checkers


def _max_words(text: str, c: Constraint) -> bool:
    return count_words(text) <= c.n


def _min_words(text: str, c: Constraint) -> bool:
    return count_words(text) >= c.n


def _max_sentences(text: str, c: Constraint) -> bool:
    return 1 <= count_sentences(text) <= c.n


def _min_sentences(text: str, c: Constraint) -> bool:
    return count_sentences(text) >= c.n


def _include_keyword(text: str, c: Constraint) -> bool:
    return all(count_keyword(text, w) >= 1 for w in c.words)


def _keyword_frequency(text: str, c: Constraint) -> bool:
    return count_keyword(text, c.words[0]) >= c.n


def _forbidden_words(text: str, c: Constraint) -> bool:
    return bool(text) and all(count_keyword(text, w) == 0 for w in c.words)


def _bullets(text: str, c: Constraint) -> bool:
    return sum(1 for line in text.splitlines() if _BULLET.match(line)) == c.n


def _sections(text: str, c: Constraint) -> bool:
    """Exactly ``n`` header lines ``SECTION 1`` … ``SECTION n`` in order, each followed by some content."""
    lines = text.splitlines()
    headers = [(i, int(m.group(1))) for i, line in enumerate(lines) if (m := _HEADER.match(line))]
    if [number for _, number in headers] != list(range(1, c.n + 1)):
        return False
    ends = [i for i, _ in headers[1:]] + [len(lines)]
    for (start, _), end in zip(headers, ends, strict=True):
        body = _HEADER.sub("", lines[start]) + "\n" + "\n".join(lines[start + 1 : end])
        if not _HAS_WORD.search(body):
            return False
    return True


def _paragraphs(text: str, c: Constraint) -> bool:
    parts = _PARAGRAPH_SPLIT.split(text.strip())
    return len(parts) == c.n and all(_HAS_WORD.search(p) for p in parts)


def _lowercase(text: str, c: Constraint) -> bool:
    return text == text.lower() and any(ch.isalpha() for ch in text)


def _uppercase(text: str, c: Constraint) -> bool:
    return text == text.upper() and any(ch.isalpha() for ch in text)


def _start_with(text: str, c: Constraint) -> bool:
    return text.strip().lower().startswith(c.phrase.lower())


def _end_with(text: str, c: Constraint) -> bool:
    return text.strip().lower().endswith(c.phrase.lower())


def _quotes(text: str, c: Constraint) -> bool:
    stripped = text.strip()
    return len(stripped) >= 3 and stripped[0] == '"' and stripped[-1] == '"' and bool(_HAS_WORD.search(stripped))


def _json(text: str, c: Constraint) -> bool:
    try:
        value = parse_json_answer(text)
    except (ValueError, RecursionError):
        return False
    return isinstance(value, dict) and all(key in value for key in c.words)


def _no_commas(text: str, c: Constraint) -> bool:
    return bool(text) and "," not in text and "，" not in text


def _postscript(text: str, c: Constraint) -> bool:
    """A line starting with ``P.S.`` and some text, after some text of the main answer."""
    match = _POSTSCRIPT.search(text)
    return match is not None and bool(_HAS_WORD.search(text[: match.start()]))


def _title(text: str, c: Constraint) -> bool:
    return any(_HAS_WORD.search(m.group(1)) for m in _TITLE.finditer(text))


def _placeholders(text: str, c: Constraint) -> bool:
    return sum(1 for inner in _PLACEHOLDER.findall(text) if re.search("[A-Za-z]", inner)) >= c.n


KINDS: dict[str, ConstraintKind] = {
    k.name: k
    for k in (
        ConstraintKind("max_words", _max_words, "Use at most {n} words.", "word count ≤ n"),
        ConstraintKind("min_words", _min_words, "Use at least {n} words.", "word count ≥ n"),
        ConstraintKind("max_sentences", _max_sentences, "Use at most {n} sentences.", "1 ≤ sentence count ≤ n"),
        ConstraintKind("min_sentences", _min_sentences, "Use at least {n} sentences.", "sentence count ≥ n"),
        ConstraintKind("include_keyword", _include_keyword, "Include the word {words}.", "the keyword appears"),
        ConstraintKind(
            "keyword_frequency", _keyword_frequency, "Use the word {words} at least {n} times.", "keyword count ≥ n"
        ),
        ConstraintKind("forbidden_words", _forbidden_words, "Do not use the word {words}.", "none of the words"),
        ConstraintKind(
            "bullets",
            _bullets,
            'Use exactly {n} bullet points, each on its own line starting with "* ".',
            'exactly n lines starting with "* " or "- "',
        ),
        ConstraintKind(
            "sections",
            _sections,
            'Split the answer into {n} sections, each starting with a line "SECTION k" (SECTION 1, SECTION 2, ...).',
            "header lines SECTION 1..n in order, each with content",
        ),
        ConstraintKind(
            "paragraphs",
            _paragraphs,
            'Write exactly {n} paragraphs, separated from each other by a line "***".',
            "n non-empty parts split by ***",
        ),
        ConstraintKind(
            "lowercase", _lowercase, "Write everything in lowercase letters; use no capitals.", "no capitals"
        ),
        ConstraintKind("uppercase", _uppercase, "Write everything in capital letters.", "no lowercase letters"),
        ConstraintKind("start_with", _start_with, 'Start your answer with the words "{phrase}".', "starts with phrase"),
        ConstraintKind("end_with", _end_with, 'End your answer with the exact words "{phrase}"', "ends with phrase"),
        ConstraintKind(
            "quotes", _quotes, "Wrap your entire answer in double quotation marks.", 'first and last char are "'
        ),
        ConstraintKind("json", _json, "Answer with a JSON object only{keys}.", "parses as a JSON object (+ keys)"),
        ConstraintKind("no_commas", _no_commas, "Do not use any commas.", "no comma"),
        ConstraintKind(
            "postscript",
            _postscript,
            'At the end, add a postscript starting with "P.S.".',
            "a line starting with P.S. after the main text",
        ),
        ConstraintKind(
            "title",
            _title,
            "Give your answer a title in double angular brackets, like <<my title>>.",
            "contains <<title>>",
        ),
        ConstraintKind(
            "placeholders",
            _placeholders,
            "Include at least {n} placeholder{s} in square brackets, such as [name].",
            "≥ n [placeholders]",
        ),
    )
}

_STRUCTURE = ("json", "bullets", "sections", "paragraphs")
_PAIRS: tuple[tuple[str, str], ...] = (
    *((a, b) for i, a in enumerate(_STRUCTURE) for b in _STRUCTURE[i + 1 :]),
    ("lowercase", "uppercase"),
    ("lowercase", "sections"),  # headers must read SECTION
    ("lowercase", "postscript"),  # the marker must read P.S.
    ("uppercase", "json"),  # the keys are lowercase
    ("quotes", "json"),
    ("quotes", "start_with"),
    ("quotes", "end_with"),
    ("quotes", "sections"),
    ("quotes", "bullets"),
    ("json", "no_commas"),
    ("json", "start_with"),
    ("json", "end_with"),
    ("json", "postscript"),
    ("json", "title"),
    ("json", "max_sentences"),
    ("json", "min_sentences"),
    ("json", "placeholders"),
    ("title", "start_with"),
    ("end_with", "postscript"),
)
CONFLICTS: Mapping[str, frozenset[str]] = {
    kind: frozenset({b for a, b in _PAIRS if a == kind} | {a for a, b in _PAIRS if b == kind}) for kind in KINDS
}
REPEATABLE = frozenset({"include_keyword"})  # may appear several times in one task (with different words)


def compatible(kinds: list[str] | tuple[str, ...], kind: str) -> bool:
    """Whether ``kind`` can join a task that already has ``kinds`` (no conflict, no repeat of a single-use kind)."""
    if kind in kinds and kind not in REPEATABLE:
        return False
    return not any(other in CONFLICTS[kind] for other in kinds)


def _quoted(words: tuple[str, ...], joiner: str) -> str:
    quoted = [f'"{w}"' for w in words]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + f" {joiner} " + quoted[-1]


def describe(c: Constraint) -> str:
    """The plain-English description shown to the model (e.g. ``Use at most 40 words.``)."""
    kind = KINDS[c.kind]
    if c.kind == "json":
        keys = f", with the keys {_quoted(c.words, 'and')}" if c.words else ""
        return kind.template.format(keys=keys)
    if c.kind == "forbidden_words":
        plural = "words" if len(c.words) > 1 else "word"
        return f"Do not use the {plural} {_quoted(c.words, 'or')}."
    return kind.template.format(n=c.n, words=_quoted(c.words, "and"), phrase=c.phrase, s="" if c.n == 1 else "s")
