"""What a built distribution says about itself agrees with the tree: the version in
pyproject.toml is ``cursor_agent_api.__version__``; the declared licence's text ships (hatchling
puts ``LICENSE`` in the wheel and the sdist by default); no requirement is listed twice."""

from __future__ import annotations

import re
import sys
from typing import Any

from docs_blocks import REPO

import cursor_agent_api

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest's own dependency before 3.11
    import tomli as tomllib


def _project() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project


def test_the_version_is_the_package_s() -> None:
    assert _project()["version"] == cursor_agent_api.__version__


def test_the_declared_licence_ships_with_its_text() -> None:
    assert _project()["license"] == "MIT"
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 the cursor-agent-api authors" in text
    assert "THE SOFTWARE IS PROVIDED \"AS IS\", WITHOUT WARRANTY OF ANY KIND" in text


def test_no_requirement_is_listed_twice() -> None:
    project = _project()
    for where, requirements in [("dependencies", project["dependencies"]),
                                *project["optional-dependencies"].items()]:
        names = [re.split(r"[\[<>=!~; ]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements]
        assert len(names) == len(set(names)), f"{where}: {requirements}"
