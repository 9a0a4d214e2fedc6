"""Every place a prompt enters (the clients, sync and async, streamed or not, and the sessions
on them) refuses one that cannot be sent as UTF-8 with a ValueError naming the position,
before any agent runs — not a UnicodeEncodeError from deep in the runtime."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from cursor_agent_api import (
    AgentConfig,
    AsyncConversationSession,
    AsyncCursorAgentClient,
    ConversationSession,
    CursorAgentClient,
)
from cursor_agent_api.client import check_prompt

LATIN1 = b"summarize: caf\xe9".decode("utf-8", "surrogateescape")  # what a pipe or argv gives


def sync_query(config: AgentConfig, prompt: str) -> Any:
    with CursorAgentClient(config) as client:
        return client.query(prompt)


def sync_stream(config: AgentConfig, prompt: str) -> Any:
    with CursorAgentClient(config) as client:
        return client.query_stream(prompt)


def async_query(config: AgentConfig, prompt: str) -> Any:
    return asyncio.run(AsyncCursorAgentClient(config).query(prompt))


def async_stream(config: AgentConfig, prompt: str) -> Any:
    async def main() -> Any:
        client = AsyncCursorAgentClient(config)
        try:
            return client.query_stream(prompt)
        finally:
            await client.aclose()

    return asyncio.run(main())


def session_send(config: AgentConfig, prompt: str) -> Any:
    with ConversationSession(config) as session:
        return session.send(prompt)


def session_stream(config: AgentConfig, prompt: str) -> Any:
    with ConversationSession(config) as session:
        return session.send_stream(prompt)


def async_session_send(config: AgentConfig, prompt: str) -> Any:
    async def main() -> Any:
        session = AsyncConversationSession(config)
        try:
            return await session.send(prompt)
        finally:
            await session.aclose()

    return asyncio.run(main())


ENTRIES = [sync_query, sync_stream, async_query, async_stream, session_send, session_stream,
           async_session_send]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda f: f.__name__)
def test_a_prompt_that_is_not_utf8_is_refused_before_any_agent_runs(
        entry: Callable[[AgentConfig, str], Any], sim: Callable[..., AgentConfig],
        argvs: list[list[str]]) -> None:
    with pytest.raises(ValueError, match="character 14 is the byte 0xE9") as info:
        entry(sim(), LATIN1)
    assert not isinstance(info.value, UnicodeError)
    assert argvs == []  # nothing ran


def test_a_lone_surrogate_is_named() -> None:
    with pytest.raises(ValueError, match="character 2 is a lone surrogate U\\+D800"):
        check_prompt("ab\ud800cd")


def test_text_and_bytes_pass_as_given() -> None:
    assert check_prompt("café ☕ 𝄞") == "café ☕ 𝄞"
    assert check_prompt(b"caf\xe9") == b"caf\xe9"  # bytes: sent as given
    with pytest.raises(TypeError):
        check_prompt(5)


@pytest.mark.parametrize("prompt", ["", "  \n\t ", b" \r\n"], ids=["empty", "whitespace", "bytes"])
@pytest.mark.parametrize("transport", ["print", "acp"])
@pytest.mark.parametrize("entry", ENTRIES, ids=lambda f: f.__name__)
def test_an_empty_prompt_is_refused_before_any_agent_runs(
        entry: Callable[[AgentConfig, Any], Any], sim: Callable[..., AgentConfig],
        argvs: list[list[str]], transport: str, prompt: str | bytes) -> None:
    # was: print mode ran the agent for its "No prompt provided"; ACP mode sent it and succeeded
    with pytest.raises(ValueError, match="the prompt is empty"):
        entry(sim(transport=transport), prompt)
    assert argvs == []  # nothing ran
