"""Packaging facts that must agree with the code: the vllm extra admits exactly the releases the backend accepts."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module_constant(path: Path, name: str) -> object:
    """A module-level constant read from source (the vllm backend module cannot be imported without vLLM)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                return ast.literal_eval(node.value)
    raise AssertionError(f"{name} not found in {path}")


def test_the_vllm_extra_pins_the_range_the_backend_supports() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    supported = _module_constant(ROOT / "core" / "backends" / "vllm_backend.py", "SUPPORTED_VLLM")
    assert project["optional-dependencies"]["vllm"] == [f"vllm{supported}"]
    # vllm 0.32 pins torch==2.13.0: the main torch pin must admit it, or the extra cannot install.
    assert "torch==2.13.*" in project["dependencies"]
