"""A server in this test process (uvicorn in a thread), for tests that reach into it:
the store's fault-injection hook (``app.state.store.faults``) and its settings.

The agents are the simulator, with the test's marker in their environment (the
teardown of ``make_inproc`` asserts none outlives the test).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from server_helpers import MARKER_ENV, SIM, poll

from cursor_agent_api.server import ServerSettings, create_app


class InProcServer:
    """``create_app(settings)`` served by uvicorn on 127.0.0.1, port 0, in a thread."""

    def __init__(self, tmp: Path, db_url: str, root: Path, marker: str, **settings: Any) -> None:
        sim_env = {"CURSOR_CONFIG_DIR": str(tmp / "cursor-config"), **settings.pop("sim_env", {})}
        self.token = settings.pop("token", None) or uuid.uuid4().hex
        self.settings = ServerSettings(
            token=self.token,
            port=0,
            database_url=db_url,
            roots=(root,),
            agent_binary=settings.pop("agent_binary", SIM),
            agent_env={MARKER_ENV: marker, **sim_env},
            **settings,
        )
        self.app = create_app(self.settings)
        config = uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on",
                                proxy_headers=False)  # as serve's
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, name="inproc-server", daemon=True)
        self.url = ""

    def start(self) -> InProcServer:
        self.thread.start()
        poll(lambda: self.server.started or not self.thread.is_alive(), timeout=60)
        assert self.server.started, "the in-process server did not start"
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    @property
    def store(self) -> Any:
        return self.app.state.store

    @property
    def runs(self) -> Any:
        return self.app.state.runs

    def on_write(self, purpose: str, nth: int, action: Callable[[], None]) -> threading.Event:
        """Call ``action`` in the server's thread just before the ``nth`` write of ``purpose``
        (``"events"``, ``"run_end"``...) tried from now on, which then meets the faults as
        ``action`` left them. Faults injected so land mid-run, with writes still to come,
        however fast or slow the machine runs the turn: a test that polls the stored records,
        then injects them, can find the turn over already on a loaded machine. Returns an
        event set once ``action`` has run."""
        faults = self.store.faults
        check = faults.check
        seen = 0
        done = threading.Event()

        def counting(p: str) -> None:
            nonlocal seen
            if p == purpose and not done.is_set():
                seen += 1
                if seen == nth:
                    faults.check = check
                    action()
                    done.set()
            check(p)

        faults.check = counting
        return done

    def client(self) -> httpx.Client:
        return httpx.Client(
            base_url=self.url, headers={"Authorization": f"token {self.token}"}, timeout=120.0
        )

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(90)
        assert not self.thread.is_alive(), "the in-process server did not stop"
