"""No secret of the config (API key, ``env`` values, header values) in a failed turn's error
message, its ``stderr`` or the result's ``stderr``/``error``, whatever the agent printed; and
none in the refusal of a malformed header (docs/client.md, "Errors")."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cursor_agent_api import AgentConfig, CursorAgentClient

KEY = "sk-abcdefabcdef"
ENV_SECRET = "hunter2hunter2"
HEADER_VALUE = "Bearer sk-live-SECRET123456"


def _agent(tmp_path: Path, body: str) -> str:
    exe = tmp_path / "agent"
    exe.write_text(f"#!/bin/bash\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


# commander.js, on a CLI build without --header, echoes the option it refuses
COMMANDER = ("for a in \"$@\"; do case \"$a\" in --header=*) "
             "echo \"error: unknown option '$a'\" >&2; exit 1;; esac; done\n"
             "cat >/dev/null\necho '{\"type\":\"result\",\"subtype\":\"success\","
             "\"is_error\":false,\"result\":\"ok\"}'")
KEYLEAK = "cat >/dev/null\necho \"Error: invalid key $CURSOR_API_KEY and $MYSECRET\" >&2\nexit 1"


@pytest.mark.parametrize("header", [
    "Authorization Bearer sk-live-0123",  # the secret within the first 40 characters
    "sk-live-0123456789abcdef",  # a bare key
    "Bearer=sk-live-0123",
])
def test_a_malformed_header_shows_no_value(header: str) -> None:
    with pytest.raises(ValueError) as info:
        AgentConfig(headers=[header])
    message = str(info.value)
    assert "sk-live" not in message and "0123" not in message
    assert "AgentConfig.headers" in message


def test_a_malformed_header_still_names_itself() -> None:
    with pytest.raises(ValueError, match="'Authorization'"):
        AgentConfig(headers=["Authorization Bearer sk-live-0123"])


def _assert_clean(result: object, *secrets: str) -> None:
    exc = result.exception  # type: ignore[attr-defined]
    assert exc is not None
    texts = [str(exc), exc.message, exc.stderr or "", result.stderr or "",  # type: ignore[attr-defined]
             result.error or ""]  # type: ignore[attr-defined]
    for secret in secrets:
        for text in texts:
            assert secret not in text, text
    assert "***" in str(exc) and "***" in (result.stderr or "")  # type: ignore[attr-defined]


def test_a_header_value_echoed_by_the_agent_is_masked(tmp_path: Path) -> None:
    with CursorAgentClient(agent_binary=_agent(tmp_path, COMMANDER),
                           headers=[f"Authorization: {HEADER_VALUE}"]) as client:
        result = client.query("x")
    assert not result.success
    _assert_clean(result, HEADER_VALUE, "SECRET123456")
    assert "unknown option '--header=Authorization: ***'" in str(result.exception)


def test_the_key_and_env_values_printed_by_the_agent_are_masked(tmp_path: Path) -> None:
    with CursorAgentClient(agent_binary=_agent(tmp_path, KEYLEAK), api_key=KEY,
                           env={"MYSECRET": ENV_SECRET, "SHORT": "abc"}) as client:
        result = client.query("x")
    assert not result.success
    _assert_clean(result, KEY, ENV_SECRET)
    assert "invalid key *** and ***" in str(result.exception)
    event_texts = [str(e.data) for e in result.events]
    assert not any(KEY in t or ENV_SECRET in t for t in event_texts)


def test_short_values_are_not_masked(tmp_path: Path) -> None:
    body = "cat >/dev/null\necho \"Error: mode $MODE\" >&2\nexit 1"
    with CursorAgentClient(agent_binary=_agent(tmp_path, body), env={"MODE": "fast"}) as client:
        result = client.query("x")
    assert "Error: mode fast" in str(result.exception)


def test_env_values_whose_name_says_no_secret_are_not_masked(tmp_path: Path) -> None:
    """``MODE=production-blue`` is configuration, not a credential: a message quoting it
    stays readable (masking every env value garbled "waiting for the answer to initialize"
    when a test agent was told which request to ignore)."""
    body = "cat >/dev/null\necho \"Error: mode $MODE\" >&2\nexit 1"
    with CursorAgentClient(agent_binary=_agent(tmp_path, body),
                           env={"MODE": "production-blue"}) as client:
        result = client.query("x")
    assert "Error: mode production-blue" in str(result.exception)


def test_acp_the_key_printed_by_the_agent_is_masked(tmp_path: Path) -> None:
    body = "echo \"Error: invalid key $CURSOR_API_KEY and $MYSECRET\" >&2\nexit 1"
    with CursorAgentClient(agent_binary=_agent(tmp_path, body), api_key=KEY,
                           env={"MYSECRET": ENV_SECRET}, transport="acp",
                           timeout=20) as client:
        result = client.query("x")
    assert not result.success
    _assert_clean(result, KEY, ENV_SECRET)


INHERITED = "echo \"Error: key $CURSOR_API_KEY, token $GITHUB_TOKEN, in $PWD\" >&2\nexit 1"


@pytest.mark.parametrize("transport", ["print", "acp"])
def test_inherited_secrets_printed_by_the_agent_are_masked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    """A CI job exports ``CURSOR_API_KEY`` (the command line takes the key nowhere else) and
    a ``GITHUB_TOKEN``: the agent inherits them, so they are masked as ``api_key`` is; ``PWD``
    (the folder, which errors quote) is not."""
    monkeypatch.setenv("CURSOR_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", ENV_SECRET)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PWD", str(tmp_path))
    body = INHERITED if transport == "acp" else "cat >/dev/null\n" + INHERITED
    with CursorAgentClient(agent_binary=_agent(tmp_path, body), transport=transport,
                           timeout=20) as client:
        result = client.query("x")
    assert not result.success
    _assert_clean(result, KEY, ENV_SECRET)
    assert f"key ***, token ***, in {tmp_path}" in (result.stderr or "")
