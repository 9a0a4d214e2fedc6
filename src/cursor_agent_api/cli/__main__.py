"""``python -m cursor_agent_api.cli``: the same as the ``cursor-agent-api`` command, a program
entry point as the console script is: a command stopped by a signal it received dies from it
(:func:`~cursor_agent_api.signal_exit.exit_by_signal`)."""

from ..signal_exit import SignalExit, exit_by_signal
from . import main

try:
    main()
except SignalExit as ended:
    exit_by_signal(ended.signum)
