"""The pluggy markers of the ``arena`` project.

Plugin authors import ``hookimpl`` from ``arena.core``; ``hookspec`` is used only by ``core/api/hookspecs.py``.
"""

import pluggy

PROJECT_NAME = "arena"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
