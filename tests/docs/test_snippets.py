"""Every ```python and ```sh block of README.md and docs/*.md runs, as written, on the simulator.

How each runs is in ``docs_runner.py`` (a fresh copy of the repository as the working
directory, the venv activated, ``agent`` = the simulator, the copy trusted, stdin closed, a
time bound); a ``<!-- snippet: ... -->`` comment before a block changes how it runs
(``docs_blocks.py``). A Python block made only of ``test_`` functions runs under pytest.

Each snippet must exit 0 and, where it prints something worth checking, print it (EXPECT).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from docs_blocks import DATA_LANGUAGES, RUN_LANGUAGES, blocks, doc_files, runnable_blocks
from docs_runner import make_clone, reader_env, run_block, tracked_files

BLOCKS = runnable_blocks()

# What some snippets must print (substrings of stdout), beyond exiting 0.
EXPECT: dict[str, list[str]] = {}

# Snippets that fail today only because of a bug another engineer is fixing: the
# integrator removes the mark after merging that branch (strict: it fails once fixed).
XFAIL: dict[str, str] = {}


@pytest.fixture(scope="module")
def files() -> list[str]:
    return tracked_files()


def _param(block: object) -> object:
    bid = block.id  # type: ignore[attr-defined]
    marks = [pytest.mark.xfail(strict=True, reason=XFAIL[bid])] if bid in XFAIL else []
    return pytest.param(block, id=bid, marks=marks)


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_snippet_runs(block: object, files: list[str], tmp_path: Path) -> None:
    clone = make_clone(files, tmp_path / "repo")
    env = reader_env(tmp_path, clone)
    outcome = run_block(block, clone, env)  # type: ignore[arg-type]
    ok_codes = (0, 130) if outcome.stopped else (0,)
    assert outcome.returncode in ok_codes, outcome.describe()
    if block.marker and block.marker.stop_after:  # type: ignore[attr-defined]
        assert outcome.stopped, "never printed " + repr(block.marker.stop_after) + "\n" + outcome.describe()  # type: ignore[attr-defined]
    for text in EXPECT.get(block.id, []):  # type: ignore[attr-defined]
        assert text in outcome.stdout, f"{text!r} not printed\n{outcome.describe()}"


def test_every_block_is_code_or_data() -> None:
    """Each fenced block says what it is: code that runs, or data."""
    unlabeled = [f"{b.path.name}:{b.line} ```{b.lang}" for p in doc_files() for b in blocks(p)
                 if b.lang not in RUN_LANGUAGES + DATA_LANGUAGES]
    assert unlabeled == []


def test_expectations_name_existing_snippets() -> None:
    ids = {b.id for b in BLOCKS}
    assert sorted(set(EXPECT) - ids) == [] and sorted(set(XFAIL) - ids) == []
