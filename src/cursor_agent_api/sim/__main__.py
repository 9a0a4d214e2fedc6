"""``python -m cursor_agent_api.sim``: the same as the ``cursor-agent-sim`` command."""

from . import main

raise SystemExit(main())
