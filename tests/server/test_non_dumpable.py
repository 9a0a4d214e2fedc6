"""The agent cannot read the server's environment (``server/non_dumpable.py``; Linux)."""

from __future__ import annotations

import ctypes
import errno
import logging
import subprocess
import sys
from collections.abc import Callable

import launcher
import pytest
from proc_probe import assert_environ_refused, exec_with_secret_in_env, read_environ_prompt
from server_helpers import Server, all_events, new_chat, wait_run

from cursor_agent_api.server import non_dumpable

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def test_the_agent_cannot_read_the_servers_environment(
    make_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(launcher, "popen", exec_with_secret_in_env("--token", "CURSOR_AGENT_API_TOKEN"))
    server = make_server()
    assert isinstance(server.proc, subprocess.Popen)
    pid = server.proc.pid
    with server.client() as c:
        chat = new_chat(c, force=True)
        run = c.post(f"/api/chats/{chat['id']}/runs", json={"prompt": read_environ_prompt(pid)})
        assert run.status_code == 202, run.text
        assert wait_run(c, run.json()["id"])["status"] == "succeeded"
        text = repr(all_events(c, chat["id"]))
    assert_environ_refused(text, pid, server.token)


def test_elsewhere_it_changes_nothing_and_says_so(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(non_dumpable.sys, "platform", "darwin")
    with caplog.at_level(logging.DEBUG, "cursor_agent_api.server.non_dumpable"):
        assert non_dumpable.make_non_dumpable() is False
    assert caplog.messages == ["not Linux (darwin): the process stays dumpable"]


def test_a_prctl_that_fails_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    class NoPrctl:
        def __init__(self, *args: object, **kwargs: object) -> None:
            pass

        def prctl(self, *args: int) -> int:
            ctypes.set_errno(errno.EINVAL)
            return -1

    monkeypatch.setattr(non_dumpable.ctypes, "CDLL", NoPrctl)
    with caplog.at_level(logging.DEBUG, "cursor_agent_api.server.non_dumpable"):
        assert non_dumpable.make_non_dumpable() is False
    (record,) = caplog.records
    assert record.levelname == "WARNING"
    assert "cannot make this process non-dumpable (prctl: Invalid argument)" in record.message
