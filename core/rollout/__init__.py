"""Playing: the episode loop (engine), batching of LLM requests, prompts, seats, the generic text adapter, arena
snapshots and ``arena play``.
"""
