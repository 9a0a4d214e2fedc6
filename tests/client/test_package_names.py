"""The package's public names are imported on first use (PEP 562): each still resolves, the
modules that were attributes still are, and a program that needs only the simulator or the
protocol does not import the client, asyncio or the ACP runtime at start-up."""

from __future__ import annotations

import subprocess
import sys

import pytest

import cursor_agent_api


@pytest.mark.parametrize("name", cursor_agent_api.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(cursor_agent_api, name) is not None
    assert name in dir(cursor_agent_api)


def test_the_modules_that_were_attributes_still_are() -> None:
    assert cursor_agent_api.protocol.Transcript is cursor_agent_api.Transcript  # type: ignore[attr-defined]
    for name in ("client", "config", "errors", "permissions", "runtime", "sessions"):
        assert getattr(cursor_agent_api, name).__name__ == f"cursor_agent_api.{name}"
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cursor_agent_api.nope  # type: ignore[attr-defined]  # noqa: B018


@pytest.mark.parametrize("module", ["cursor_agent_api.sim", "cursor_agent_api.protocol"])
def test_the_simulator_and_the_protocol_start_without_the_client(module: str) -> None:
    code = (f"import sys, {module}; "
            "print(sorted(m for m in ('asyncio', 'cursor_agent_api.client', "
            "'cursor_agent_api.runtime', 'cursor_agent_api.permissions') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
