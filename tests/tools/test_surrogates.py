"""A result holding a lone surrogate (a file name ``os.listdir`` could not decode, text read with
``errors="surrogateescape"``), in a str, nested in a dict (value or key) or in an exception's
message, reaches the agent with each surrogate written as the escape ``\\udcXX`` (backslash
included). It used to fail UTF-8 encoding in the SDK: the agent got a bare transport error,
nothing was logged, and ``call.local.ok`` said the value arrived."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api import CursorAgentClient
from cursor_agent_api.protocol import ToolKind, ToolStatus
from cursor_agent_api.tools import tool
from cursor_agent_api.tools.functions import to_texts

NAME = b"caf\xe9.txt".decode("utf-8", "surrogateescape")  # 'caf\udce9.txt'
SHOWN = "caf\\udce9.txt"  # what the agent reads: a backslash, then udce9


def test_to_texts_escapes_lone_surrogates() -> None:
    assert to_texts(NAME) == ([SHOWN], None)
    texts, structured = to_texts({"files": [NAME], NAME: 1, "ok": "café \U0001f600"})
    assert structured == {"files": [SHOWN], SHOWN: 1, "ok": "café \U0001f600"}
    assert json.loads(texts[0]) == structured
    texts[0].encode("utf-8")  # UTF-8 now


@pytest.mark.parametrize("shape", ["str", "dict", "raise"])
def test_the_agent_gets_the_result_escaped(sim: Callable[..., Any], user_workspace: Path,
                                           shape: str) -> None:
    @tool
    def list_files(folder: str) -> object:
        """List the files."""
        if shape == "raise":
            raise ValueError(f"cannot open {NAME}")
        return NAME if shape == "str" else {"files": [NAME], "folder": folder}

    with CursorAgentClient(sim(), tools=[list_files]) as client:
        result = client.query('Use list_files {"folder": "."}')
    assert result.success, result.error
    (call,) = [c for c in result.tool_calls if c.kind is ToolKind.MCP]
    assert call.local is not None
    if shape == "raise":
        assert call.status is ToolStatus.FAILED, result.result
        assert call.local.error == f"ValueError: cannot open {SHOWN}"
    else:
        assert call.status is ToolStatus.SUCCEEDED, result.result
        assert call.local.ok and call.local.value in (NAME, {"files": [NAME], "folder": "."})
    if shape == "dict":  # the JSON text of {"files": ["caf\\udce9.txt"], ...}
        assert json.loads(call.mcp_output or "")["files"] == [SHOWN], ascii(call.mcp_output)
    else:
        assert SHOWN in (call.mcp_output or ""), ascii(call.mcp_output)


def test_invoke_escapes_an_exception_message() -> None:
    @tool
    def boom() -> str:
        """Fail."""
        raise OSError(f"no {NAME}")

    record = asyncio.run(boom.invoke({}))
    assert record.error == f"OSError: no {SHOWN}" and record.texts == [record.error]
