"""The command line: flags, subcommands, errors, ``python -m``."""

from __future__ import annotations

import subprocess
import sys

from cursor_agent_api.sim.cli_args import parse_args

from .conftest import Sim, kill_group

STREAM = ("-p", "--trust", "--output-format", "stream-json")


def test_version(sim: Sim) -> None:
    run = sim.run("--version")
    assert run.returncode == 0 and run.stdout.decode().startswith("2026.")
    assert sim.run("-v").stdout == run.stdout


def test_python_dash_m(sim: Sim) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cursor_agent_api.sim", "--version"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=60)
    finally:
        kill_group(proc)
    assert proc.returncode == 0 and out.startswith(b"2026.")


def test_unknown_option_errors_like_a_cli(sim: Sim) -> None:
    run = sim.run("-p", "--bogus", "hi")
    assert run.returncode == 1 and run.err.strip() == "error: unknown option '--bogus'"
    bad_header = sim.run(*STREAM, "-H", "no colon", "hi")
    assert bad_header.returncode == 1 and "invalid header" in bad_header.err
    bad_format = sim.run("-p", "--output-format", "xml", "hi")
    assert bad_format.returncode == 1


def test_headers_and_approve_mcps_are_accepted(sim: Sim) -> None:
    run = sim.run(*STREAM, "-H", "X-A: 1", "--header", "X-B: 2", "--approve-mcps", "hi")
    assert run.returncode == 0 and run.transcript.success
    opts = parse_args(["-H", "X-A: 1", "--header", "X-B: 2", "--yolo", "--approve-mcps"])
    assert opts.headers == ["X-A: 1", "X-B: 2"] and opts.force and opts.approve_mcps


def test_status_login_logout(sim: Sim) -> None:
    assert sim.run("status").stdout.decode().startswith("✓ Logged in as ")
    assert sim.run("whoami").returncode == 0
    assert sim.run("logout").returncode == 0
    status = sim.run("status")
    assert status.returncode == 0 and status.stdout.decode().strip() == "Not logged in"
    refused = sim.run(*STREAM, "hi")
    assert refused.returncode == 1 and refused.err.startswith("Error: Authentication required")
    with_key = sim.run(*STREAM, "hi", env={"CURSOR_API_KEY": "key_1"})
    assert with_key.returncode == 0
    assert sim.run("login").returncode == 0
    assert sim.run(*STREAM, "hi").returncode == 0
    no_auth = sim.run("status", env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert no_auth.returncode == 0 and no_auth.stdout.decode().strip() == "Not logged in"


def test_models(sim: Sim) -> None:
    run = sim.run("models")
    assert run.returncode == 0
    lines = [x for x in run.stdout.decode().splitlines() if " - " in x]
    assert "gpt-5-mini - GPT-5 Mini" in lines and lines[0].startswith("auto - Auto")
    assert sim.run("--list-models").stdout == run.stdout
    refused = sim.run("models", env={"CURSOR_AGENT_SIM_FAULT": "auth"})
    assert refused.returncode == 1 and refused.err.startswith("Error: Authentication required")


def test_interactive_subcommands_refuse(sim: Sim) -> None:
    run = sim.run("ls")
    assert run.returncode == 1 and "interactive terminal" in run.err
