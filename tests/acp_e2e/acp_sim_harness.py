"""The simulator behind a recording wrapper, for the end-to-end ACP tests."""

from __future__ import annotations

import contextlib
import json
import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.testing import sim_binary, sim_env

_TEE = """
import os, subprocess, sys, threading
sim = subprocess.Popen([{sim!r}, *sys.argv[1:]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

def copy(src, dst, log):
    with open(log, "ab") as f:
        while chunk := os.read(src, 65536):
            f.write(chunk)
            f.flush()
            os.write(dst, chunk)

def client_to_sim():
    try:
        copy(0, sim.stdin.fileno(), {sent!r})
    except OSError:
        pass
    sim.stdin.close()

threading.Thread(target=client_to_sim, daemon=True).start()
out = threading.Thread(target=copy, args=(sim.stdout.fileno(), 1, {received!r}), daemon=True)
out.start()
code = sim.wait()
out.join()
os._exit(code)
"""
"""The wrapper: the simulator as a child, every byte copied both ways and logged; it exits
with the simulator (a shell pipeline would keep the client's stdout open after a crash)."""


@dataclass
class Sim:
    """``cursor-agent-sim`` behind a recording wrapper: its workspace, config dir and logs."""

    root: Path
    workspace: Path
    config_dir: Path
    binary: Path
    sent: Path
    """What the client wrote (every process, appended)."""
    received: Path
    """What the agent wrote."""

    def config(self, fault: str | None = None, **fields: Any) -> AgentConfig:
        env = {**sim_env(fault=fault, speed=0, config_dir=self.config_dir),
               **fields.pop("env", {})}
        fields.setdefault("kill_grace", 5.0)
        return AgentConfig(transport="acp", agent_binary=str(self.binary), workspace=str(self.workspace),
                           trust=True, env=env, **fields)

    def frames(self, which: Path) -> list[dict[str, Any]]:
        if not which.exists():
            return []
        out = []
        for line in which.read_text().splitlines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if isinstance(obj, dict):
                    out.append(obj)
        return out

    def client_frames(self) -> list[dict[str, Any]]:
        return self.frames(self.sent)

    def agent_frames(self) -> list[dict[str, Any]]:
        return self.frames(self.received)


def make_sim(tmp_path: Path) -> Sim:
    """A workspace, a config dir and ``cursor-agent-sim`` behind ``tee``s logging both ways."""
    workspace = tmp_path / "ws"
    config_dir = tmp_path / "cfg"
    workspace.mkdir()
    config_dir.mkdir()
    sent, received = tmp_path / "sent.ndjson", tmp_path / "received.ndjson"
    wrapper = tmp_path / "agent"
    wrapper.write_text(f"#!{sys.executable}\n" + _TEE.format(sim=sim_binary(), sent=str(sent),
                                                             received=str(received)))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return Sim(tmp_path, workspace, config_dir, wrapper, sent, received)
