"""The ``arena`` command line: click commands, logging set-up."""
