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
