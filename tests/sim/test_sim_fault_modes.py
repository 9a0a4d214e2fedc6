"""A fault or a script that does not apply to the chosen mode is refused (exit 1, one line on
stderr saying so), as an unknown fault is: silently ignored, it let a resilience test pass
without testing anything (ACP never read the script, nor ``silence``; print mode never read
``crash-once``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import Sim

PRINT_ONLY = ["trust", "invalid-model", "usage-limit", "bad-resume", "chat-busy", "hang-after-result",
              "exit1-after-result", "ignore-sigterm", "stderr-flood", "silence", "huge-line",
              "split-writes"]
ACP_ONLY = ["cancel-unsupported", "load-not-found", "reject-completed", "reject-failed", "crash-once",
            "unknown-request"]
RECORDING = next((Path(__file__).parent.parent / "data" / "cursor-real").glob("06-*.ndjson"))


@pytest.mark.parametrize("name", PRINT_ONLY)
def test_acp_refuses_a_print_mode_fault(sim: Sim, name: str) -> None:
    run = sim.run("acp", env={"CURSOR_AGENT_SIM_FAULT": name})
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.err == (f"cursor-agent-sim: CURSOR_AGENT_SIM_FAULT: {name!r} applies to print mode (-p) "
                       "only, not to acp\n")


@pytest.mark.parametrize("name", ACP_ONLY)
def test_print_mode_refuses_an_acp_fault(sim: Sim, name: str) -> None:
    run = sim.stream("list the files", env={"CURSOR_AGENT_SIM_FAULT": f"banner,{name}"})
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.err == (f"cursor-agent-sim: CURSOR_AGENT_SIM_FAULT: {name!r} applies to acp only, "
                       "not to print mode (-p)\n")


def test_acp_refuses_a_script(sim: Sim) -> None:
    run = sim.run("acp", env={"CURSOR_AGENT_SIM_SCRIPT": str(RECORDING)})
    assert (run.returncode, run.stdout) == (1, b"")
    assert "CURSOR_AGENT_SIM_SCRIPT: replay applies to print mode (-p) only, not to acp" in run.err


def test_a_replayed_script_refuses_a_fault_of_the_built_in_agent(sim: Sim) -> None:
    run = sim.stream("replay", env={"CURSOR_AGENT_SIM_SCRIPT": str(RECORDING),
                                    "CURSOR_AGENT_SIM_FAULT": "huge-line"})
    assert (run.returncode, run.stdout) == (1, b"")
    assert "'huge-line' changes the built-in agent's turn, not a replayed script" in run.err


@pytest.mark.parametrize(("mode", "fault"), [("print", "auth"), ("print", "crash"), ("print", "banner"),
                                             ("print", "slow"), ("acp", "auth"), ("acp", "banner"),
                                             ("acp", "slow-start")])
def test_faults_of_both_modes_are_taken_in_each(sim: Sim, mode: str, fault: str) -> None:
    env = {"CURSOR_AGENT_SIM_FAULT": fault, "CURSOR_AGENT_SIM_DELAY": "0"}
    run = sim.run("acp", env=env) if mode == "acp" else sim.stream("hi", env=env)
    assert "applies to" not in run.err and (mode == "print" or run.returncode == 0)
