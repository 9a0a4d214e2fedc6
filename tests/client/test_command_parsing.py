"""``agent status`` / ``agent models`` output is parsed in linear time: it runs on the event loop.

``_EMAIL`` was searched from every character of a long word without ``@`` (each start read the
rest of the word), and ``(.+?)\\s*$`` in ``_AS`` and ``_MODEL_LINE`` rescanned a run of spaces at
every lazy step: 100 KB of output blocked the caller's loop for 16 s, past ``timeout=``, and a
MiB would block it for about half an hour. No timing here: each case is a MiB of near misses
(seconds at most when the parse is linear, many minutes when it is quadratic) under a hang
guard, and the parse's answer is checked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from cursor_agent_api import AccountStatus, AsyncCursorAgentClient, ModelInfo
from cursor_agent_api.runtime.commands import parse_models, parse_status

MIB = 1 << 20


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("text", "account"), [
    ("z" * MIB, None),  # one long word without "@"
    ("a." * (MIB // 2), None),
    ("x@" + "b-" * (MIB // 2), None),  # an "@" but no domain with a dot
    ("a@" * (MIB // 2), None),
    ("Logged in as x" + " " * MIB + "y", "x" + " " * MIB + "y"),
    ("logged in as" + " \n" * (MIB // 2), None),
    ("z" * MIB + " ada@example.com", "ada@example.com"),
], ids=["word", "dots", "no-domain", "many-at", "as-spaces", "as-blank-lines", "e-mail-last"])
def test_a_mib_of_hostile_status_output_is_parsed_at_once(text: str, account: str | None) -> None:
    assert parse_status(text).account == account


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("text", "models"), [
    ("a - x" + " " * MIB + "y", [ModelInfo("a", "x" + " " * MIB + "y")]),
    ("a - x" + "(current," * (MIB // 9), [ModelInfo("a", "x" + "(current," * (MIB // 9))]),
    ("a - x" + " " * MIB + "(current)" + " " * MIB, [ModelInfo("a", "x", True)]),
    ("a" + " -" * (MIB // 2), [ModelInfo("a", ("a" + " -" * (MIB // 2))[4:])]),
    ("a" * MIB, []),
], ids=["spaces", "open-mark", "spaced-mark", "dashes", "slug"])
def test_a_mib_of_hostile_models_output_is_parsed_at_once(text: str,
                                                          models: list[ModelInfo]) -> None:
    assert parse_models(text) == models


def test_the_usual_outputs_read_as_before() -> None:
    assert parse_status("✓ Logged in as ada@example.com.  \r\n") == AccountStatus(
        True, "ada@example.com", "✓ Logged in as ada@example.com.")
    assert parse_status("Signed in: ada+x@mail.example.org (Pro)").account == \
        "ada+x@mail.example.org"
    assert parse_status("Logged in as\n  Ada Lovelace  \n").account == "Ada Lovelace"
    assert parse_status("Authenticated with an API key") == AccountStatus(
        True, None, "Authenticated with an API key")
    assert parse_models("* gpt-5 - GPT-5   (current, default)  \n  > auto - Auto\n"
                        "bad line\nsonnet-4.5 - Claude 4.5 Sonnet \t") == [
        ModelInfo("gpt-5", "GPT-5", True), ModelInfo("auto", "Auto"),
        ModelInfo("sonnet-4.5", "Claude 4.5 Sonnet")]


@pytest.mark.timeout(120)
def test_status_of_an_agent_printing_a_mib_returns(stand_in_agent: Callable[..., Path]) -> None:
    """The whole path, through the async client and its loop."""
    agent = stand_in_agent(f"head -c {MIB} /dev/zero | tr '\\0' z; echo")
    status = asyncio.run(AsyncCursorAgentClient(agent_binary=str(agent)).status(timeout=100))
    assert status.logged_in is False and status.account is None
    assert status.message == "z" * MIB
