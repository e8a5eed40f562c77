"""The revision probe's "kept" column (tests/arenas/instruct_revision_probe.py): on multi-constraint tasks, of the
failed drafts that met some constraint, how many revisions still meet all of those."""

from __future__ import annotations

from typing import Any

from tests.arenas.instruct_revision_probe import kept, table


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
