"""The pluggy host: plugin discovery through entry points, one PluginManager per learner, and the catalogues (arenas,
opponents, backends, models) the registration hooks fill.
"""
