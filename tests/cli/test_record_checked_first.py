"""``--record`` names a file that cannot be written: said before anything else is printed.
With ``--simulate`` the ``⚠ SIMULATED`` banner came first, then the usage error, so the
banner announced a run that never started. Now the file is opened first: the error alone,
exit 2, no banner, no turn (no chat saved), in ``run`` and ``chat``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "cursor_agent_api.cli"]  # (as tests/cli/conftest.py's)


@pytest.mark.parametrize("command", ["run", "chat"])
def test_an_unwritable_record_is_said_before_the_banner(
        command: str, cli: Callable[..., subprocess.CompletedProcess[str]],
        cli_env: dict[str, str], tmp_path: Path) -> None:
    record = tmp_path / "no-such-dir" / "run.jsonl"
    args = [command, "--simulate", "--trust", "--record", str(record)]
    done = cli(*args, "hi") if command == "run" else cli(*args, stdin="hi\n")
    assert done.returncode == 2, done.stderr
    assert "SIMULATED" not in done.stdout + done.stderr, (done.stdout, done.stderr)
    assert f"cannot write --record {record}: No such file or directory" in done.stderr
    assert done.stdout == ""
    home = Path(cli_env["CURSOR_AGENT_API_HOME"])
    assert not home.exists() or not any(p.is_file() for p in home.rglob("*")), \
        sorted(home.rglob("*"))


def test_a_recording_that_stops_names_its_file_on_one_line(tmp_path: Path) -> None:
    """The warning of a recording that stops mid-turn (a full disk) shows a newline in the
    file's name as ``\\n``: the name cannot split the warning into a forged second line."""
    import errno

    from cursor_agent_api.cli.turns import Recorder
    from cursor_agent_api.protocol import parse_event

    class Full:
        def write(self, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None: ...
        def close(self) -> None: ...

    said: list[str] = []
    recorder = Recorder(tmp_path / "run\nforged: ok.ndjson", warn=said.append)
    recorder._file.close()  # type: ignore[union-attr]
    recorder._file = Full()  # type: ignore[assignment]
    recorder.write(parse_event('{"type":"user"}'))
    recorder.close()
    assert len(said) == 1 and "\n" not in said[0], said
    assert "run\\nforged: ok.ndjson" in said[0], said


@pytest.mark.parametrize("command", ["run", "chat"])
def test_a_run_refused_before_its_turn_leaves_an_earlier_recording_alone(
        command: str, cli_env: dict[str, str], tmp_path: Path) -> None:
    """stdout cannot be written (a full disk): the run is refused before its turn, and the
    ``--record`` file of an earlier run keeps its lines (it is emptied when a turn starts).
    A file the refused run would have created is not left behind either."""
    earlier = tmp_path / "keep.jsonl"
    earlier.write_text('{"earlier":"recording"}\n')
    new = tmp_path / "new.jsonl"
    for record in (earlier, new):
        args = [*CLI, command, "--simulate", "--trust", "--record", str(record)]
        with open("/dev/full", "w") as full:
            done = subprocess.run([*args, "hi"] if command == "run" else args, input="hi\n",
                                  stdout=full, stderr=subprocess.PIPE, text=True, timeout=90,
                                  cwd=cli_env["TEST_WS"], env=cli_env, check=False)
        assert done.returncode == 1, done.stderr
        assert "No space left on device" in done.stderr, done.stderr
    assert earlier.read_text() == '{"earlier":"recording"}\n'
    assert not new.exists()
