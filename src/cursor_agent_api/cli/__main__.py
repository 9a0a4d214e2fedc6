"""``python -m cursor_agent_api.cli``: the ``cursor-agent-api`` command, run as the console
script runs it (:func:`cursor_agent_api.console_script.main`: a command stopped by a signal it
received dies from it)."""

from ..console_script import main

main()
