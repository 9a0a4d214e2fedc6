"""``python -m cursor_agent_api.cli``: the ``cursor-agent-api`` command, ended as the console
script ends it (:func:`cursor_agent_api.console_script.main`: a command stopped by a signal it
received dies from it). Python imports this package before this module runs: its
``__init__`` imports nothing, so that click and the group load inside the console script's
``try``, where a Ctrl-C in those first ~60 ms ends the command quietly, from the SIGINT."""

from ..console_script import main

main()
