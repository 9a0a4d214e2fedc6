"""What the simulator's helpers and variables take: the README's ``sim_env`` example passes
``mypy --strict``; a wrong argument to ``sim_env`` is an error naming it; a speed that is not a
finite number, an empty script and one that is not stream-json are refused (exit 1, said on
stderr) instead of a run that tests nothing."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cursor_agent_api.testing import sim_env

from .conftest import Sim

README = Path(__file__).parent.parent.parent / "README.md"


def test_the_readme_sim_env_example_passes_mypy_strict(tmp_path: Path) -> None:
    """``AgentConfig.env`` was ``dict[str, str | None]`` (invariant): the ``dict[str, str]``
    of ``sim_env`` did not fit it under ``mypy --strict``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    (example,) = [b for b in blocks if "env=sim_env(" in b]
    (tmp_path / "example.py").write_text(example)
    run = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
                          "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"fault": 123}, TypeError, "sim_env(fault=...): a fault name or an iterable of names, got 123"),
    ({"fault": ["crash", None]}, TypeError, "sim_env(fault=...): fault names are str, got None"),
    ({"speed": "1"}, TypeError, "sim_env(speed=...): a number (int or float), got '1'"),
    ({"delay": "2"}, TypeError, "sim_env(delay=...): a number (int or float), got '2'"),
    ({"speed": True}, TypeError, "sim_env(speed=...)"),
    ({"speed": float("nan")}, ValueError, "sim_env(speed=...): a finite number >= 0, got nan"),
    ({"delay": -1}, ValueError, "sim_env(delay=...): a finite number >= 0, got -1"),
    ({"seed": 123}, TypeError, "sim_env(seed=...): a str, got 123"),
    ({"script": b"/x"}, TypeError, "sim_env(script=...): a str or os.PathLike path, got b'/x'"),
    ({"config_dir": 5}, TypeError, "sim_env(config_dir=...): a str or os.PathLike path, got 5"),
])
def test_a_wrong_argument_to_sim_env_is_named(kwargs: dict[str, object], error: type[Exception],
                                               words: str) -> None:
    with pytest.raises(error) as raised:
        sim_env(**kwargs)  # type: ignore[arg-type]
    assert words in str(raised.value)


@pytest.mark.parametrize("value", ["nan", "inf"])
def test_a_speed_that_is_not_finite_is_refused(sim: Sim, value: str) -> None:
    run = sim.stream("hi", env={"CURSOR_AGENT_SIM_SPEED": value})
    assert (run.returncode, run.stdout) == (1, b"")
    assert f"CURSOR_AGENT_SIM_SPEED: must be a finite number >= 0, got {value!r}" in run.err


@pytest.mark.parametrize(("text", "words"), [
    ("", "is empty: nothing to replay"),
    ("\n  \n", "is empty: nothing to replay"),
    ("not json at all\n[1, 2]\n", "holds no JSON object: not a recording of --output-format stream-json"),
])
def test_a_script_with_nothing_to_replay_is_refused(sim: Sim, tmp_path: Path, text: str, words: str) -> None:
    script = tmp_path / "script.ndjson"
    script.write_text(text)
    run = sim.stream("hi", env={"CURSOR_AGENT_SIM_SCRIPT": str(script)})
    assert (run.returncode, run.stdout) == (1, b"")
    assert run.err == f"Error: CURSOR_AGENT_SIM_SCRIPT={script} {words}\n"
