"""A program that runs a command whose first await is a connection completing with a Ctrl-C
inside its callback: ``asyncio``'s connect callback, after its ``done()`` check (Python runs
a signal handler between any two bytecodes), before its ``set_result``. The installed SIGINT
handler is called right there, as the signal would be (``test_serve_start_ctrl_c``,
``test_worker_threads``)."""

from __future__ import annotations

_PROGRAM = """
import asyncio
import signal
import {module} as patched


async def connecting(*args, **kwargs):
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def completes():
        if not fut.done():
            signal.getsignal(signal.SIGINT)(signal.SIGINT, None)
            fut.set_result(None)
            print("connected", flush=True)

    loop.call_soon(completes)
    await fut
    await asyncio.sleep(60)  # (the Ctrl-C's cancel ends it)


patched.{name} = connecting
from cursor_agent_api.console_script import main
main({argv!r})
"""


def ctrl_c_in_a_callback(module: str, name: str, argv: list[str]) -> str:
    """The program's text: ``module.name`` (the command's first connection) replaced by one
    that completes with a Ctrl-C inside its callback, then ``main(argv)``."""
    return _PROGRAM.format(module=module, name=name, argv=argv)
