"""The ``tiny`` model: a small transformer the project builds itself (tokenizer, hand-wired circuit, demonstrations,
SFT, quality gates), so tests and the demo need no download.
"""
