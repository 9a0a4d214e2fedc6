"""cursor_agent_api.testing: the pytest plugin's fixtures (loaded through the pytest11 entry
point) and its helpers, used the way a user's test would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cursor_agent_api.config import AgentConfig
from cursor_agent_api.protocol import Transcript
from cursor_agent_api.runtime.argv import build_argv, build_env
from cursor_agent_api.testing import sim_binary, sim_env

from .conftest import kill_group


def _run(config: AgentConfig, prompt: str) -> tuple[int, bytes, bytes]:
    proc = subprocess.Popen(
        build_argv(config),
        env=build_env(config),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(prompt.encode(), timeout=120)
    finally:
        kill_group(proc)
    return proc.returncode, out, err


def test_sim_binary_and_env(tmp_path: Path) -> None:
    path = sim_binary()
    assert os.path.isabs(path) and os.access(path, os.X_OK)
    assert sim_env() == {}
    env = sim_env(
        fault=["crash", "banner"], script=tmp_path / "s.ndjson", speed=1, config_dir=tmp_path, delay=0.2
    )
    assert env == {
        "CURSOR_AGENT_SIM_FAULT": "crash,banner",
        "CURSOR_AGENT_SIM_SCRIPT": str((tmp_path / "s.ndjson").resolve()),
        "CURSOR_AGENT_SIM_SPEED": "1",
        "CURSOR_AGENT_SIM_DELAY": "0.2",
        "CURSOR_CONFIG_DIR": str(tmp_path),
    }


def test_config_fixture_runs_the_simulator(
    cursor_sim_config: AgentConfig, cursor_sim_workspace: Path, cursor_sim_config_dir: Path
) -> None:
    assert isinstance(cursor_sim_config, AgentConfig)
    assert cursor_sim_config.agent_binary == sim_binary()
    assert cursor_sim_config.workspace == str(cursor_sim_workspace) and cursor_sim_config.trust
    assert cursor_sim_config.env["CURSOR_CONFIG_DIR"] == str(cursor_sim_config_dir)
    assert cursor_sim_config.env["CURSOR_AGENT_SIM_FAULT"] is None  # isolated from the caller's env
    (cursor_sim_workspace / "hello.py").write_text("print('hi')\n")
    code, out, err = _run(cursor_sim_config, "list the files")
    assert code == 0, err
    t = Transcript.from_bytes(out)
    assert t.success and "hello.py" in t.text and t.cwd == str(cursor_sim_workspace.resolve())
    assert list(cursor_sim_config_dir.glob("chats/*/*/turns.jsonl"))


@pytest.mark.cursor_sim(fault="crash")
def test_marker_selects_a_fault(cursor_sim_config: AgentConfig) -> None:
    assert cursor_sim_config.env["CURSOR_AGENT_SIM_FAULT"] == "crash"
    code, out, _ = _run(cursor_sim_config, "list the files")
    assert code == 1 and not Transcript.from_bytes(out).finished


def test_factory_with_a_script_and_fields(make_cursor_sim_config: Any) -> None:
    script = next((Path(__file__).parent.parent / "data" / "cursor-real").glob("02-*.ndjson"))
    config = make_cursor_sim_config(script=script, stream_partial_output=True, model="gpt-5-mini")
    assert config.stream_partial_output and config.model == "gpt-5-mini"
    code, out, _ = _run(config, "replay")
    t = Transcript.from_bytes(out)
    assert code == 0 and t.result_text == "READ-OK" == t.text


def test_the_client_against_the_fixture(cursor_sim_config: AgentConfig, cursor_sim_workspace: Path) -> None:
    from cursor_agent_api.client import CursorAgentClient

    (cursor_sim_workspace / "notes.txt").write_text("alpha\n")
    with CursorAgentClient(cursor_sim_config) as client:
        result = client.query("read notes.txt")
    assert result.success, result.error
    assert result.text == result.result and "alpha" in result.result


SIM_READS = ("CURSOR_AGENT_SIM_FAULT", "CURSOR_AGENT_SIM_SCRIPT", "CURSOR_AGENT_SIM_SPEED",
             "CURSOR_AGENT_SIM_DELAY", "CURSOR_AGENT_SIM_SEED", "CURSOR_AGENT_SIM_ACP_ENRICH",
             "CURSOR_AGENT_SIM_ACP_ASK_EDITS", "CURSOR_AGENT_SIM_ACP_MCP",
             "CURSOR_AGENT_SIM_MCP_TIMEOUT", "CURSOR_AGENT_SIM_ACP_EOF",
             "CURSOR_AGENT_SIM_ACP_CURSOR_FORM", "CURSOR_AGENT_SIM_ACP_USER_ECHO", "CURSOR_DATA_DIR",
             "CURSOR_API_KEY")


def test_the_fixtures_clear_every_variable_the_simulator_reads(
    monkeypatch: pytest.MonkeyPatch, make_cursor_sim_config: Any
) -> None:
    for name in SIM_READS:
        monkeypatch.setenv(name, "1")
    env = make_cursor_sim_config().env
    assert {name: env.get(name, "missing") for name in SIM_READS} == dict.fromkeys(SIM_READS)


def test_sim_vars_names_every_variable_in_the_simulators_sources() -> None:
    """The one list (sim/settings.py) is complete: no ``CURSOR_AGENT_SIM_*`` name in the
    simulator's sources is missing from it."""
    import re

    from cursor_agent_api import sim
    from cursor_agent_api.sim.settings import SIM_VARS

    sources = Path(sim.__file__).parent.glob("*.py")
    named = {m for path in sources for m in re.findall(r"CURSOR_AGENT_SIM_[A-Z_]*[A-Z]", path.read_text())}
    assert named == set(SIM_VARS)


def test_a_callers_acp_variable_does_not_reach_the_test(
    monkeypatch: pytest.MonkeyPatch, make_cursor_sim_config: Any, cursor_sim_workspace: Path
) -> None:
    """docs/simulator.md's promise, end to end: ``CURSOR_AGENT_SIM_ACP_ASK_EDITS=1`` in the
    shell that runs pytest made the ACP agent ask before an edit (and the edit not happen)."""
    from cursor_agent_api.client import CursorAgentClient

    monkeypatch.setenv("CURSOR_AGENT_SIM_ACP_ASK_EDITS", "1")
    with CursorAgentClient(make_cursor_sim_config(transport="acp")) as client:
        result = client.query('create hello.txt with "Hi"')
    assert result.success, result.error
    assert (cursor_sim_workspace / "hello.txt").read_text().strip() == "Hi"


@pytest.mark.cursor_sim("crash", None, 0)
def test_marker_binds_positional_arguments_as_fault_script_speed(cursor_sim_config: AgentConfig) -> None:
    env = cursor_sim_config.env
    assert (env["CURSOR_AGENT_SIM_FAULT"], env["CURSOR_AGENT_SIM_SPEED"]) == ("crash", "0")
    code, out, _ = _run(cursor_sim_config, "list the files")
    assert code == 1 and not Transcript.from_bytes(out).finished


@pytest.mark.cursor_sim(seed="s1", fault="slow", model="gpt-5-mini")
class TestMarkersMerge:
    @pytest.mark.cursor_sim(fault="crash")
    def test_the_closest_marker_wins_per_key(self, cursor_sim_config: AgentConfig) -> None:
        env = cursor_sim_config.env
        assert (env["CURSOR_AGENT_SIM_FAULT"], env["CURSOR_AGENT_SIM_SEED"]) == ("crash", "s1")
        assert cursor_sim_config.model == "gpt-5-mini"

    @pytest.mark.cursor_sim("banner")
    def test_a_positional_fault_overrides_the_class_keyword(self, cursor_sim_config: AgentConfig) -> None:
        assert cursor_sim_config.env["CURSOR_AGENT_SIM_FAULT"] == "banner"


@pytest.mark.parametrize(("mark", "words"), [
    (pytest.mark.cursor_sim("crash", None, 0, 1), "at most 3 positional arguments (fault, script, speed)"),
    (pytest.mark.cursor_sim("crash", fault="slow"), "got fault both by position and by keyword"),
])
def test_marker_arguments_that_cannot_bind_are_a_type_error(mark: Any, words: str) -> None:
    from cursor_agent_api._testing_fixtures import marker_fields

    with pytest.raises(TypeError) as raised:
        marker_fields([mark.mark])
    assert words in str(raised.value)


@pytest.fixture
def users_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stands for the user's real data dir (``$XDG_DATA_HOME``, no ``CURSOR_AGENT_API_HOME`` in
    the shell); requested before the fixtures, so theirs is set after it."""
    monkeypatch.delenv("CURSOR_AGENT_API_HOME", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg"


def test_tools_under_the_fixtures_leave_nothing_in_the_users_data_dir(
    users_data_dir: Path, cursor_sim_config: AgentConfig, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A turn with tools leaves ``injections/`` and ``approvals/`` in the per-user data dir
    (before 2026-11-24 also ``<hash>/lock`` in each, per test); the fixtures now point the
    data dir (``XDG_DATA_HOME``) and ``CURSOR_AGENT_API_HOME`` at the test's own."""
    from cursor_agent_api.client import CursorAgentClient
    from cursor_agent_api.tools import tool

    @tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        return {"id": order_id, "status": "shipped"}

    with CursorAgentClient(cursor_sim_config, tools=[lookup_order]) as client:
        result = client.query('Check lookup_order {"order_id": "A1"}')
    assert result.success and '"status": "shipped"' in result.result, result.error
    assert not users_data_dir.exists()
    home = Path(os.environ["CURSOR_AGENT_API_HOME"])
    assert tmp_path_factory.getbasetemp() in home.parents and (home / "injections").is_dir()
