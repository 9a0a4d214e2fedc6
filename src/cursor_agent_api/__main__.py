"""``python -m cursor_agent_api``: the ``cursor-agent-api`` command (as
``python -m cursor_agent_api.cli``), for an environment whose scripts directory is not on
``PATH``. It ends as the console script ends (:func:`cursor_agent_api.console_script.main`):
a command stopped by a signal it received dies from it."""

from .console_script import main

main()
