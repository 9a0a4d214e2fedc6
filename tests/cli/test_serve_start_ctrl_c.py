"""A Ctrl-C as ``serve``'s start connects to its database is no traceback (review 34).

Before uvicorn's handlers, Ctrl-C is ``asyncio.run``'s, which cancelled its task from inside
whichever callback the signal interrupted: as a connection completed, its ``set_result``
raised ``InvalidStateError``, logged with a traceback. The cancel is now done by the loop
between callbacks (``signal_exit.cancelled_by_signals``; the worker's case is in
``test_worker_threads``; the other signals, and a second one, in ``test_serve_start_signals``)."""

from __future__ import annotations

import signal
import sys

from ctrl_c_in_a_callback import ctrl_c_in_a_callback
from test_signal_death import in_own_group

PROGRAM = ctrl_c_in_a_callback("cursor_agent_api.cli.serve", "_start_app",
                               ["serve", "--simulate", "--port", "0"])


def test_a_ctrl_c_inside_a_callback_as_serve_starts_is_no_traceback(cli_env: dict[str, str]) -> None:
    with in_own_group([sys.executable, "-c", PROGRAM], cli_env) as proc:
        out, err = proc.communicate(timeout=120)  # (a hang guard)
    assert proc.returncode == -signal.SIGINT, (proc.returncode, out, err)
    assert "connected" in out, (out, err)
    assert "Traceback" not in err and "InvalidStateError" not in err, err
