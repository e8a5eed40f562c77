"""The golden runs give the numbers they gave when the golden file was written (see tests/golden/runs.py).

Counts, names and flags must match exactly; floats to a relative 1e-4, which absorbs the last bits that differ
between CPUs while any change of behaviour (a different sample, advantage or update) moves them far more, or to
an absolute 1e-5: the first step's PPO loss with group-normalised advantages is a sum that cancels to ~1e-7, pure
rounding, and another CPU's summation order gave other values of that size (2026-12-02: only the seven
`train/loss` entries of the golden runs differed, by < 2e-6, every sample, return and count equal).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.golden.runs import GOLDEN, RUNS, build_toy, produce


def _differences(expected: Any, got: Any, where: str = "") -> list[str]:
    if isinstance(expected, dict) and isinstance(got, dict):
        out = [f"{where}/{k}: missing" for k in expected.keys() - got.keys()]
        out += [f"{where}/{k}: unexpected" for k in got.keys() - expected.keys()]
        for key in expected.keys() & got.keys():
            out += _differences(expected[key], got[key], f"{where}/{key}")
        return out
    if isinstance(expected, list) and isinstance(got, list):
        if len(expected) != len(got):
            return [f"{where}: {len(got)} items, expected {len(expected)}"]
        return [
            d for i, (e, g) in enumerate(zip(expected, got, strict=True)) for d in _differences(e, g, f"{where}[{i}]")
        ]
    if isinstance(expected, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return (
            []
            if math.isclose(expected, got, rel_tol=1e-4, abs_tol=1e-5)
            else [f"{where}: {got!r}, expected {expected!r}"]
        )
    return [] if expected == got else [f"{where}: {got!r}, expected {expected!r}"]


def test_differences_catch_a_change() -> None:
    base = {"a": [1.0, {"b": 2}], "c": "x"}
    assert _differences(base, json.loads(json.dumps(base))) == []
    assert _differences(base, {"a": [1.001, {"b": 2}], "c": "x"}) == ["/a[0]: 1.001, expected 1.0"]
    assert _differences(base, {"a": [1.0, {"b": 3}], "c": "x"}) == ["/a[1]/b: 3, expected 2"]
    assert _differences(base, {"a": [1.0], "c": "x"}) == ["/a: 1 items, expected 2"]


@pytest.mark.slow
def test_golden_runs_unchanged(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text())
    assert sorted(expected) == sorted(RUNS)
    got = produce(build_toy(tmp_path / "toy"), tmp_path / "runs")
    differences = _differences(expected, got)
    assert not differences, f"{len(differences)} numbers changed, first ones:\n" + "\n".join(differences[:20])
