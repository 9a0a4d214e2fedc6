"""The fake ``agent acp`` the ACP tests start: its files, and configs that run it."""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import Any

from cursor_agent_api.config import AgentConfig

FAKE = Path(__file__).with_name("fake_agent.py")


class FakeAgent:
    """Where the fake agent keeps its sessions and its log of received frames."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.state = root / "sessions"
        self.state.mkdir()
        self.log = root / "received.ndjson"
        self.binary = root / "agent"
        self.binary.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
        self.binary.chmod(self.binary.stat().st_mode | stat.S_IXUSR)
        self.workspace = root / "ws"
        self.workspace.mkdir()

    def config(self, **fields: Any) -> AgentConfig:
        env = dict(fields.pop("env", {}))
        env.update({"FAKE_ACP_DIR": str(self.state), "FAKE_ACP_LOG": str(self.log)})
        fields.setdefault("kill_grace", 1.0)
        fields.setdefault("timeout", 60.0)
        fields.setdefault("agent_binary", str(self.binary))
        return AgentConfig(transport="acp",
                           workspace=str(self.workspace), env=env, **fields)

    def received(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []
