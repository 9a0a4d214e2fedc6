"""A Ctrl-C that comes as a ``chat`` turn has ended by itself (while the chat is saved) cancels
nothing, and the chat says so: it said "turn cancelled", though the turn had completed.

The window (the save) is a few milliseconds: the chat runs in a pseudo-terminal (pexpect)
with its save patched to send the Ctrl-C itself (SIGINT to its own process, as a terminal
delivers it), once, as the first turn's save begins. Nothing is timed."""

from __future__ import annotations

import sys

import pexpect

from cursor_agent_api.cli.chat import LATE_CTRL_C

SCRIPT = """
import os, signal, sys
from cursor_agent_api.cli import main
from cursor_agent_api.cli.saved_chats import SavedChats

save, sent = SavedChats.save, []

def ctrl_c_as_it_is_saved(self, session):
    if not sent:
        sent.append(True)
        os.kill(os.getpid(), signal.SIGINT)  # handled at the next bytecode: here
    return save(self, session)

SavedChats.save = ctrl_c_as_it_is_saved
sys.argv = ["cursor-agent-api", "chat", "--simulate", "--trust"]
sys.exit(main())
"""


def test_ctrl_c_as_a_completed_turn_is_saved_cancels_nothing(cli_env: dict[str, str]) -> None:
    env = {**cli_env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    child = pexpect.spawn(sys.executable, ["-c", SCRIPT], env=env, cwd=env["TEST_WS"],
                          encoding="utf-8", timeout=60, dimensions=(40, 120))
    try:
        child.expect("Ctrl-D leaves")
        child.expect("› ")
        child.sendline("remember the codeword: heron")
        child.expect("Noted")  # the turn ended by itself: its answer
        index = child.expect_exact([LATE_CTRL_C, "turn cancelled"])
        assert index == 0, "a turn that had ended was said to be cancelled"
        child.expect("› ")  # the chat goes on
        child.sendline("what did I ask you to remember?")
        child.expect("heron")  # the first turn is in the chat
        child.expect("› ")
        child.sendeof()
        child.expect("continue later: cursor-agent-api chat --resume")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, (child.exitstatus, child.signalstatus)
    finally:
        child.terminate(force=True)
