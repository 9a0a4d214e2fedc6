"""status() and list_models(), sync and async, with typed errors."""

from __future__ import annotations

import asyncio

import pytest

from cursor_agent_api import (
    AgentNotFoundError,
    AsyncCursorAgentClient,
    AuthenticationError,
    CursorAgentClient,
    ModelInfo,
)


def call(flavour, config, method):
    if flavour == "sync":
        with CursorAgentClient(config) as client:
            return getattr(client, method)()
    return asyncio.run(getattr(AsyncCursorAgentClient(config), method)())


def test_status_logged_in(sim, flavour):
    status = call(flavour, sim(), "status")
    assert status.logged_in and status.account == "simulator@cursor-agent-sim.invalid"


def test_status_with_api_key(sim, flavour):
    status = call(flavour, sim(api_key="sk-test"), "status")
    assert status.logged_in and "API key" in status.message


def test_status_not_logged_in(sim, flavour):
    status = call(flavour, sim("auth"), "status")
    assert not status.logged_in and status.account is None
    assert status.message == "Not logged in"


def test_list_models(sim, flavour):
    models = call(flavour, sim(), "list_models")
    assert len(models) > 3 and all(isinstance(m, ModelInfo) for m in models)
    slugs = {m.slug: m.display_name for m in models}
    assert slugs["auto"] == "Auto" and "gpt-5" in slugs


def test_list_models_needs_auth(sim, flavour):
    with pytest.raises(AuthenticationError, match="Authentication required"):
        call(flavour, sim("auth"), "list_models")


def test_status_binary_missing(sim, flavour, tmp_path):
    with pytest.raises(AgentNotFoundError):
        call(flavour, sim(agent_binary=str(tmp_path / "nope")), "status")


def _agent_script(tmp_path, body: str) -> str:
    path = tmp_path / "agent"
    path.write_text(f"#!/bin/sh\necho $$ > {tmp_path / 'pid'}\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_command_past_its_timeout_stops_its_group(tmp_path, spawned):
    """The short commands run as a turn: a timeout stops the whole group (here a child the
    agent left in it) and fails with the command's own message."""
    from cursor_agent_api import AgentConfig, AgentTimeoutError
    from cursor_agent_api.runtime.commands import fetch_status
    from cursor_agent_api.runtime.groups import group_alive

    config = AgentConfig(agent_binary=_agent_script(tmp_path, "sleep 30 &\nwait"))
    with pytest.raises(AgentTimeoutError, match=r"`status` did not finish within 1 s"):
        asyncio.run(fetch_status(config, timeout=1.0))
    # the group as spawned (its pid): on a loaded machine the timeout can come before the
    # script has written its pid file
    assert len(spawned) == 1 and not group_alive(spawned[0])


def test_a_cancelled_command_stops_its_group_before_the_cancel_propagates(tmp_path):
    from cursor_agent_api import AgentConfig
    from cursor_agent_api.runtime.commands import fetch_models
    from cursor_agent_api.runtime.groups import group_alive

    config = AgentConfig(agent_binary=_agent_script(tmp_path, "sleep 30 &\nwait"))

    async def main() -> None:
        task = asyncio.ensure_future(fetch_models(config, timeout=None))
        while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert not group_alive(int((tmp_path / "pid").read_text()))


def test_create_chat_reads_the_first_line_and_stops_an_agent_that_never_exits(tmp_path):
    from cursor_agent_api import AgentConfig
    from cursor_agent_api.runtime.commands import create_chat
    from cursor_agent_api.runtime.groups import group_alive

    chat = "8b72ae6d-ab42-4854-991e-6ecf580e66c2"
    config = AgentConfig(agent_binary=_agent_script(tmp_path, f"echo {chat}\nsleep 30 &\nwait"),
                         workspace=str(tmp_path))
    assert asyncio.run(create_chat(config)) == chat
    assert not group_alive(int((tmp_path / "pid").read_text()))


def test_a_command_that_floods_stdout_is_stopped_at_the_output_limit(tmp_path):
    """`agent status` that prints without end (a broken or hostile binary) does not fill
    memory until the timeout: past the output limit its group is stopped and the error
    says so."""
    from cursor_agent_api import AgentConfig, AgentProcessError
    from cursor_agent_api.runtime.commands import run_command
    from cursor_agent_api.runtime.groups import group_alive

    config = AgentConfig(agent_binary=_agent_script(tmp_path, "exec yes"))
    with pytest.raises(AgentProcessError, match=r"`status` printed more than 64 KiB"):
        asyncio.run(run_command(config, ["status"], timeout=60, limit=64 * 1024))
    assert not group_alive(int((tmp_path / "pid").read_text()))
