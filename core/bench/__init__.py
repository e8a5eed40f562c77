"""``arena bench``: measured numbers (rollout throughput, update speed against TRL), registered as commands by a built-
in plugin.
"""
