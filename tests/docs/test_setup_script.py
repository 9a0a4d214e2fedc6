"""``scripts/setup.sh`` on a ``.venv`` left broken: run with a stand-in Python (no network)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BROKEN_PYTHON = """#!/bin/sh
echo "$0: No module named pip" >&2
exit 1
"""
# a stand-in for the interpreter: makes a .venv whose python logs what it is asked to do
FAKE_PYTHON = f"""#!/bin/sh
if [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  printf '#!/bin/sh\\necho "$*" >> "%s"\\n' "$PWD/pip.log" > "$3/bin/python"
  chmod +x "$3/bin/python"
  exit 0
fi
exit 1
"""


def test_setup_makes_again_a_venv_without_pip(tmp_path: Path) -> None:
    """Ctrl-C while setup.sh made .venv left one without pip; every later setup, demo and test
    run failed with "No module named pip". Now setup says so and makes it again."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    broken = tmp_path / ".venv" / "bin" / "python"
    broken.parent.mkdir(parents=True)
    broken.write_text(BROKEN_PYTHON)
    broken.chmod(0o755)
    fake = tmp_path / "fake-python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", "scripts/setup.sh"], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "PYTHON": str(fake)},
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert ".venv has no working pip" in done.stderr
    assert "making it again" in done.stderr
    log = (tmp_path / "pip.log").read_text().splitlines()
    assert any(line.startswith("-m pip install") and "-e .[server]" in line for line in log)
