"""The revision probe's "kept" column (tests/arenas/instruct_revision_probe.py): on multi-constraint tasks, of the
failed drafts that met some constraint, how many revisions still meet all of those; and its split by draft shape."""

from __future__ import annotations

from typing import Any

from tests.arenas.instruct_revision_probe import by_shape, kept, length_ratio, table


def row(draft: list[bool], hindsight: list[bool], naive: list[bool]) -> dict[str, Any]:
    return {
        "kind": "lowercase+min_words",
        "draft_met": draft,
        "draft_pass": all(draft),
        "hindsight_met": hindsight,
        "hindsight_pass": all(hindsight),
        "naive_met": naive,
        "naive_pass": all(naive),
    }


def test_kept_counts_revisions_that_still_meet_what_their_draft_met() -> None:
    rows = [
        row([False, True], [True, True], [True, False]),  # hindsight keeps min_words and fixes case; naive drops it
        row([False, True], [False, True], [False, False]),  # hindsight keeps it, fixes nothing; naive drops it
        row([True, False], [True, False], [True, True]),  # both keep the case
        row([False, False], [True, True], [True, True]),  # met nothing: no part of "kept"
        row([True, True], [True, True], [True, True]),  # passed: never revised in the probe, never counted
    ]
    assert kept(rows, "hindsight") == "1.000 (3)"
    assert kept(rows, "naive") == "0.333 (3)"
    assert "| lowercase+min_words | 5 | 0.200 | 4 | 0.500 | 0.500 | 1.000 (3) | 0.333 (3) | - |" in table(rows)


def test_kept_is_empty_where_no_failed_draft_met_anything() -> None:
    one_constraint = [row([False], [True], [False]), row([True], [True], [True])]
    assert kept(one_constraint, "hindsight") == "-"
    legacy = [{"kind": "quotes", "draft_pass": False, "hindsight_pass": True, "naive_pass": False}]  # older probe.json
    assert kept(legacy, "naive") == "-"


def test_by_shape_splits_failed_pairs_by_what_the_draft_met_and_measures_length_against_the_ask() -> None:
    """``uppercase+min_words.000`` asks 40 words: the median length ratio is the arena's word count over 40."""
    words = lambda n: " ".join(["word"] * n)  # noqa: E731

    def pair(draft_met: list[bool], hindsight: int, naive: int) -> dict[str, Any]:
        return {
            "task_id": "uppercase+min_words.000",
            "kind": "uppercase+min_words",
            "draft": words(80),
            "draft_met": draft_met,
            "draft_pass": all(draft_met),
            "hindsight": words(hindsight),
            "hindsight_met": [True, hindsight >= 40],
            "hindsight_pass": hindsight >= 40,
            "naive": words(naive),
            "naive_met": [False, naive >= 40],
            "naive_pass": False,
        }

    assert length_ratio("uppercase+min_words.000", words(60)) == 1.5
    rows = [pair([False, True], 80, 80), pair([False, True], 20, 40), pair([True, True], 80, 80)]
    shapes = by_shape(rows).splitlines()
    assert shapes[2] == "| met only the length | 2 | hindsight | 0.500 | 1.000 | 0.500 | 1.25 (2.00) |"
    assert shapes[3] == "| met only the length | 2 | naive | 0.000 | 0.000 | 1.000 | 1.50 (2.00) |"
    assert shapes[4].startswith("| met only the length | | hindsight − naive | +0.500 [")
    assert len(shapes) == 5  # the draft that passed is never revised; no other shape occurs
    assert by_shape([{**r, "kind": "lowercase", "draft_met": [False]} for r in rows]) == "-"
