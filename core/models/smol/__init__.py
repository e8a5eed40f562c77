"""Models the project builds on SmolLM2-135M-Instruct for one testbed (``smollm2-menu``: menu.py)."""
