"""``python -m cursor_agent_api.cli``: the ``cursor-agent-api`` command, ended as the console
script ends it (:func:`cursor_agent_api.console_script.main`: a command stopped by a signal it
received dies from it). Python imports this package (click, the group) before this module
runs, so a Ctrl-C in those first ~60 ms is Python's own ``KeyboardInterrupt`` here; the
console script catches that one too."""

from ..console_script import main

main()
