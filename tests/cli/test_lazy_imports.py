"""The command line imports only what the subcommand it runs needs.

Each start of ``cursor-agent-api`` used to import every subcommand's module (the client, the
runtime, asyncio, rich's Markdown and markdown-it, ...), ``--help`` included: most of its
start-up CPU. Each check runs the command in a fresh Python and looks at ``sys.modules``
when it is done (what was imported, not how long it took).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from cursor_agent_api.cli import main

RECORDING = (Path(__file__).parents[1] / "data" / "cursor-real"
             / "02-hcn-0915-probe-43-partial-output-with-read-tool.ndjson")

_PROBE = """
import json, sys
from cursor_agent_api.cli import main
code = 0
try:
    main(sys.argv[2:], prog_name="cursor-agent-api")
except SystemExit as e:
    code = e.code
with open(sys.argv[1], "w") as f:
    json.dump({"modules": sorted(sys.modules), "code": code}, f)
"""


def _probe(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[set[str], object, str]:
    """``cursor-agent-api ARGS`` run in a fresh Python: the modules it loaded, its exit code,
    its stderr."""
    out = tmp_path / "modules.json"
    done = subprocess.run([sys.executable, "-c", _PROBE, str(out), *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False,
                          cwd=env.get("TEST_WS"))
    assert out.exists(), done.stderr
    found = json.loads(out.read_text())
    return set(found["modules"]), found["code"], done.stderr


def _imported(tmp_path: Path, env: dict[str, str], *args: str) -> set[str]:
    """The modules loaded by ``cursor-agent-api ARGS``, run in a fresh Python."""
    return _probe(tmp_path, env, *args)[0]


def _loaded(modules: set[str], *heavy: str) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


SERVER_AND_RUNTIME = ("cursor_agent_api.server", "cursor_agent_api.runtime",
                      "cursor_agent_api.client", "asyncio", "anyio", "fastapi", "sqlalchemy")
MARKDOWN = ("rich.markdown", "markdown_it", "pygments")


def test_help_imports_no_subcommand(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """``--help`` lists the subcommands without importing any of them, nor rich."""
    modules = _imported(tmp_path, cli_env, "--help")
    assert _loaded(modules, *SERVER_AND_RUNTIME, *MARKDOWN, "rich", "orjson",
                   "cursor_agent_api.protocol", "cursor_agent_api.config",
                   "cursor_agent_api.sessions", "cursor_agent_api.sim") == []
    assert "cursor_agent_api.cli.run" not in modules


def test_replay_imports_neither_the_runtime_nor_markdown(tmp_path: Path,
                                                         cli_env: dict[str, str]) -> None:
    modules = _imported(tmp_path, cli_env, "replay", str(RECORDING))
    assert "cursor_agent_api.cli.replay" in modules
    assert _loaded(modules, *SERVER_AND_RUNTIME, *MARKDOWN, "cursor_agent_api.sessions",
                   "cursor_agent_api.sim", "cursor_agent_api.cli.chat",
                   "cursor_agent_api.cli.run") == []


@pytest.mark.parametrize("output", ["text", "ndjson"])
def test_a_piped_run_imports_no_markdown_nor_the_simulator(tmp_path: Path,
                                                           cli_env: dict[str, str],
                                                           output: str) -> None:
    """A ``run`` whose output is not a terminal needs no Markdown (only the live view prints
    it), no server, and none of the simulator it starts (``--simulate`` only locates it)."""
    modules = _imported(tmp_path, cli_env, "run", "--simulate", "--trust", "-o", output, "hi")
    assert "cursor_agent_api.client" in modules  # it did run the turn
    assert _loaded(modules, *MARKDOWN, "cursor_agent_api.server", "cursor_agent_api.sim.turn",
                   "cursor_agent_api.sim.commands", "cursor_agent_api.cli.chat") == []


def test_sessions_imports_no_server_nor_markdown(tmp_path: Path, cli_env: dict[str, str]) -> None:
    """(It still imports the client and the runtime: ``cursor_agent_api.sessions``, which
    reads the saved chats, imports them.)"""
    modules = _imported(tmp_path, cli_env, "sessions", "list")
    assert "cursor_agent_api.cli.sessions_cmd" in modules
    assert _loaded(modules, *MARKDOWN, "cursor_agent_api.server", "cursor_agent_api.sim", "fastapi",
                   "sqlalchemy") == []


@pytest.mark.parametrize(("command", "url"), [("serve", "mysql://x"), ("worker", "sqlite:///x"),
                                              ("worker", "sqlite+aiosqlite:///x")])
def test_a_refused_database_url_imports_no_server(tmp_path: Path, cli_env: dict[str, str],
                                                  command: str, url: str) -> None:
    """``serve`` and ``worker`` refuse a database URL they cannot use before they import the
    server (FastAPI, uvicorn, the app): the one line comes at once (it took over a second, all
    of it imports). SQLAlchemy's URL module, which reads the URL, is the one import it needs."""
    modules = _imported(tmp_path, cli_env, command, "--simulate", "--database-url", url)
    assert "cursor_agent_api.cli.serve" in modules  # (the refusal itself: test_database_urls)
    assert _loaded(modules, "cursor_agent_api.server", "cursor_agent_api.runtime", "fastapi",
                   "starlette", "uvicorn", "sqlalchemy.ext.asyncio", "sqlalchemy.orm") == []


SERVER = ("cursor_agent_api.server", "cursor_agent_api.runtime", "fastapi", "starlette", "uvicorn",
          "sqlalchemy.ext.asyncio", "sqlalchemy.orm", "procrastinate")
"""(SQLAlchemy's URL module, which reads a database URL, is no server import.)"""
QUEUE_DB = ("--database-url", "postgresql+asyncpg://nobody@127.0.0.1:9/nowhere")  # never opened


@pytest.mark.parametrize(("args", "said"), [
    (("serve", "--token", "fifteen-chars15"), "the token must be at least 16 characters long"),
    (("serve", "--token", "has a space in it!"), "the token must be printable ASCII"),
    (("serve", "--simulate", "--agent-binary", "/bin/true"), "--simulate and --agent-binary"),
    (("serve", "--simulate", "--agent-env", "oops"), "'oops' is not NAME=VALUE"),
    (("serve", "--simulate", "--dispatch", "queue"), "--dispatch queue needs a PostgreSQL database"),
    (("serve", "--simulate", "--dispatch", "queue", "--database-url", "sqlite+aiosqlite:///x.db"),
     "--dispatch queue needs a PostgreSQL database"),
    (("worker", *QUEUE_DB, "--simulate", "--heartbeat", "31"), "--heartbeat 31 is over 30"),
    (("worker", *QUEUE_DB, "--simulate", "--agent-binary", "/bin/true"),
     "--simulate and --agent-binary"),
    (("worker", *QUEUE_DB, "--simulate", "--agent-env", "oops"), "'oops' is not NAME=VALUE"),
], ids=["serve-short-token", "serve-odd-token", "serve-simulate-and-binary", "serve-agent-env",
        "serve-queue-default-database", "serve-queue-on-sqlite", "worker-heartbeat",
        "worker-simulate-and-binary", "worker-agent-env"])
def test_a_refused_option_imports_no_server(tmp_path: Path, cli_env: dict[str, str],
                                            args: tuple[str, ...], said: str) -> None:
    """Every refusal ``serve`` and ``worker`` can make from their options' text or numbers (a
    token, two options that conflict, an --agent-env, --dispatch queue without PostgreSQL, a
    heartbeat too long) comes before they import the server: a usage error (exit 2) said at
    once, not after a second of imports. (The database URL's: the test above.)"""
    env = {k: v for k, v in cli_env.items()
           if k not in ("CURSOR_AGENT_API_TOKEN", "CURSOR_AGENT_API_DATABASE_URL")}
    modules, code, stderr = _probe(tmp_path, env, *args)
    assert code == 2 and said in stderr and "Traceback" not in stderr, (code, stderr)
    assert _loaded(modules, *SERVER) == []


def test_each_listed_line_is_the_subcommands_own() -> None:
    """The line ``--help`` shows for a subcommand, kept beside its module so that listing
    imports nothing, is the first sentence of the subcommand's own help."""
    from cursor_agent_api.cli import SUBCOMMANDS

    assert sorted(SUBCOMMANDS) == ["chat", "compact", "replay", "run", "serve", "sessions", "worker"]
    for name, lazy in SUBCOMMANDS.items():
        command = main.get_command(click.Context(main), name)
        assert isinstance(command, click.Command)
        assert command.get_short_help_str(limit=1000) == lazy.short_help


def test_help_lists_every_subcommand(cli_env: dict[str, str]) -> None:
    from cursor_agent_api.cli import SUBCOMMANDS

    done = subprocess.run([sys.executable, "-m", "cursor_agent_api.cli", "--help"], env=cli_env,
                          capture_output=True, text=True, timeout=120, check=True)
    rows = done.stdout.split("Commands:")[1].splitlines()
    listed = [row.split()[0] for row in rows if row.startswith("  ") and not row.startswith("   ")]
    assert listed == sorted(SUBCOMMANDS)
