"""Data flows one way (docs/architecture.md): no package imports one above it.

Read from the sources' ``import`` statements (those under ``TYPE_CHECKING`` and inside
functions included), so that a new import that runs back up fails here, not in a review:
the protocol imports nothing above it; the runtime knows the protocol and a turn's settings,
never the client, the tools, the command line or the server; nothing but the command line
imports the server, and nothing imports the command line."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "cursor_agent_api"

ABOVE: dict[str, set[str]] = {
    "protocol": {"runtime", "config", "permissions", "client", "sessions", "tools", "cli", "server", "sim"},
    "runtime": {"client", "sessions", "tools", "cli", "server"},
    "tools": {"client", "sessions", "cli", "server"},
    "client": {"sessions", "cli", "server"},
    "sim": {"client", "sessions", "tools", "cli", "server"},
    "server": {"cli"},
}
"""What each package may not import (its own modules and those below it are fine)."""


def _imports() -> dict[str, set[tuple[str, str]]]:
    """Each top-level package (or module) of the project: the project packages it imports,
    with the importing file."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        owner = rel.parts[0] if len(rel.parts) > 1 else rel.stem
        parts = ["cursor_agent_api", *rel.with_suffix("").parts]
        base = parts[:-1]  # the package a relative import starts from
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    start = base[: len(base) - (node.level - 1)]
                    targets.append(start + (node.module.split(".") if node.module else []))
                else:
                    targets.append((node.module or "").split("."))
            elif isinstance(node, ast.Import):
                targets.extend(alias.name.split(".") for alias in node.names)
            for target in targets:
                if len(target) > 1 and target[0] == "cursor_agent_api" and target[1] != owner:
                    found[owner].add((target[1], str(rel)))
    return found


def test_the_scan_sees_the_imports_it_must() -> None:
    """(The scan itself: the client is known to import the runtime.)"""
    assert "runtime" in {pkg for pkg, _ in _imports()["client"]}


@pytest.mark.parametrize("package", sorted(ABOVE))
def test_no_import_runs_back_up(package: str) -> None:
    wrong = sorted((f, pkg) for pkg, f in _imports().get(package, set()) if pkg in ABOVE[package])
    assert wrong == [], f"{package} imports a package above it: {wrong}"
