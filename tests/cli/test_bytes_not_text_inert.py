"""A byte that is not text (a Latin-1 file name typed, an argument in another encoding: with
``surrogateescape`` a lone surrogate) reaches the terminal as ``\\xNN``, as the controls do,
never as that raw byte: no character on a UTF-8 terminal, and ``\\x9b`` is CSI on an 8-bit
one. (It became ``?`` before the C-locale handler of ``console.py``, which wrote it raw.)"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from pty_session import run_on_pty
from rich.console import Console

from cursor_agent_api.cli.console import _replace_unencodable
from cursor_agent_api.cli.render import TurnRenderer
from cursor_agent_api.protocol import parse_event

NAME = os.fsdecode(b"caf\xe9\x9b31m")  # as argv and os.listdir give it: caf\udce9\udc9b31m


@pytest.mark.parametrize("args", [
    ["run", "--simulate", "--trust", "--workspace", "{path}", "hi"],
    ["run", "--simulate", "--trust", "--record", "{path}/r.jsonl", "hi"],
    ["run", "--simulate", "--trust", "--prompt-file", "{path}"],
    ["replay", "{path}"],
], ids=["workspace", "record", "prompt-file", "replay"])
def test_a_typed_path_holding_a_byte_that_is_not_text(cli_env: dict[str, str], tmp_path: Path,
                                                     args: list[str]) -> None:
    path = str(tmp_path / "missing" / NAME)
    got = run_on_pty([a.replace("{path}", path) for a in args], cli_env, cli_env["TEST_WS"],
                     stdout_tty=True)
    assert got.returncode == 2, got.screen[-500:]
    assert "\ufffd" not in got.screen, repr(got.screen[-500:])  # (how a raw \xe9 decodes)
    # (stderr writes it \udce9 by Python's backslashreplace: inert, in Python's spelling)
    assert f"{tmp_path}/missing/caf\\xe9\\x9b31m" in got.screen, repr(got.screen[-500:])


def test_a_typed_workspace_holding_one_on_stdout(cli_env: dict[str, str],
                                                 tmp_path: Path) -> None:
    """The footer's ``continue:`` command names the workspace typed, on stdout (``strict``,
    where the handler wrote the raw bytes), as printf's octal escapes: ``…\\351\\23331m``.
    The chat cannot be saved (JSON holds no such path): one warning, not an ``orjson``
    traceback."""
    workspace = tmp_path / NAME
    workspace.mkdir()
    got = run_on_pty(["run", "--simulate", "--trust", "--workspace", str(workspace), "hi"],
                     cli_env, cli_env["TEST_WS"], stdout_tty=True)
    assert got.returncode == 0, got.screen[-800:]
    assert "Traceback" not in got.screen, got.screen[-800:]
    footer = got.screen.partition("continue:")[2]  # (the header's cwd: the agent's, U+FFFD)
    assert footer and "\ufffd" not in footer, repr(got.screen[-800:])
    assert f"--workspace \"$(printf '{tmp_path}/caf\\351\\23331m')\"" in got.screen, \
        repr(got.screen[-800:])
    said = " ".join(got.screen.split())  # (the warning, wrapped at 80 columns)
    assert "the workspace's path is not UTF-8 text" in said, got.screen[-800:]
    assert "check the chat id" not in said, got.screen[-800:]  # (no remedy of another failure)


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])  # a UTF-8 locale; C.UTF-8
def test_agent_text_holding_one_is_written_as_its_escape(errors: str) -> None:
    """The renderer writes the agent's text through stdout as :func:`standard_output` set it
    up: the text, the tool line and the failure line show the byte as ``\\xNN``."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors=errors)
    _replace_unencodable(stream)
    renderer = TurnRenderer(Console(file=stream, force_terminal=True, width=200))
    for line in ({"type": "assistant", "message": {"content": [{"type": "text",
                                                                 "text": f"see {NAME}\n"}]}},
                 {"type": "tool_call", "subtype": "completed", "call_id": "c1",
                  "tool_call": {"readToolCall": {"args": {"path": NAME},
                                                 "result": {"success": {}}}}},
                 {"type": "result", "subtype": "error", "is_error": True, "error": NAME}):
        renderer.handle(parse_event(line))
    renderer.close()
    stream.flush()
    out = raw.getvalue()
    assert b"\xe9" not in out and b"\x9b" not in out, out
    assert out.count(b"caf\\xe9\\x9b31m") == 3, out
