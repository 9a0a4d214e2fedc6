"""``python -m cursor_agent_api.cli``: the same as the ``cursor-agent-api`` command."""

from . import main

main()
