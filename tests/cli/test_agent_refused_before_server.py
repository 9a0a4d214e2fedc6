"""``worker`` refuses an agent it cannot find before it imports the server.

The refusal ("cannot start the agent: 'agent' was not found", exit 2) read only the
options and ``PATH``, but came after the server's imports (FastAPI, SQLAlchemy's ORM, the
app, Procrastinate: about a second of CPU). Each check runs the command in a fresh Python
and looks at ``sys.modules`` once it is refused (what was imported, not how long it took).
The refusal's words and exit status: ``test_worker_start_checks.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = """
import json, sys
from cursor_agent_api.console_script import main
code = 0
try:
    main(sys.argv[2:])
except SystemExit as e:
    code = e.code
with open(sys.argv[1], "w") as f:
    json.dump({"modules": sorted(sys.modules), "code": code}, f)
"""

SERVER = ("cursor_agent_api.server", "cursor_agent_api.client", "fastapi", "starlette",
          "uvicorn", "sqlalchemy.ext.asyncio", "sqlalchemy.orm", "procrastinate")
QUEUE_DB = "postgresql+asyncpg://nobody@127.0.0.1:9/nowhere"  # never opened


def _refused(tmp_path: Path, env: dict[str, str], *args: str
             ) -> tuple[set[str], object, str]:
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(out), "worker", *args],
                          env=env, capture_output=True, text=True, timeout=120, check=False,
                          cwd=env["TEST_WS"])
    assert out.exists(), done.stderr
    found = json.loads(out.read_text())
    return set(found["modules"]), found["code"], done.stderr


@pytest.mark.parametrize("how", ["agent-not-on-path", "agent-binary-missing"])
def test_a_worker_without_its_agent_refuses_before_importing_the_server(
        tmp_path: Path, cli_env: dict[str, str], how: str) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {k: v for k, v in cli_env.items() if k != "CURSOR_AGENT_API_DATABASE_URL"}
    args = ["--database-url", QUEUE_DB, "--root", env["TEST_WS"]]
    if how == "agent-not-on-path":
        env["PATH"] = str(empty)
        said = "cannot start the agent: 'agent' was not found"
    else:
        args += ["--agent-binary", str(empty / "no-such-agent")]
        said = f"cannot start the agent: '{empty / 'no-such-agent'}' was not found"
    modules, code, stderr = _refused(tmp_path, env, *args)
    assert code == 2 and said in stderr and "Traceback" not in stderr, (code, stderr)
    assert sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in SERVER)) == []
