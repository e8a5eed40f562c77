"""Settings files: the YAML-to-attrs loader with its one-line errors, and the trial settings every arena shares."""
