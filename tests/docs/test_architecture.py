"""docs/architecture.md names every module of the package, so a newcomer finds each one there.

A module is a ``.py`` file of ``src/cursor_agent_api/`` (``__init__.py``, ``__main__.py`` and
the migration scripts aside) or a script of the web page (``web/js/*.js``). It is *named* when
a code span of the document is its path inside the package (``runtime/transport.py``) or a
pattern that matches it (``runtime/acp_*.py``, ``server/store*.py``: a module split in several
files keeps one row). That the named paths exist is ``test_links.py``'s check.
"""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from docs_blocks import REPO, prose

PACKAGE = REPO / "src" / "cursor_agent_api"
DOC = REPO / "docs" / "architecture.md"
_SPAN = re.compile(r"`([^`\n]+)`")


def modules(package: Path = PACKAGE) -> list[str]:
    """Every module's path inside the package, as the document names it."""
    found = [p for p in package.rglob("*.py")
             if p.name not in ("__init__.py", "__main__.py") and "migrations" not in p.parts]
    found += list((package / "web" / "js").glob("*.js"))
    return sorted(p.relative_to(package).as_posix() for p in found)


def named(text: str) -> set[str]:
    """The code spans of ``text`` that can name a module (a path, or a pattern of paths)."""
    return {s.strip() for s in _SPAN.findall(text) if re.fullmatch(r"[\w*./-]+\.(py|js)", s.strip())}


def unnamed(mods: list[str], spans: set[str]) -> list[str]:
    """The modules that no span names.

    >>> unnamed(["a/x.py", "a/y_1.py", "b.py"], {"a/x.py", "a/y_*.py"})
    ['b.py']
    """
    return [m for m in mods if not any(m == s or fnmatch.fnmatchcase(m, s) for s in spans)]


def test_every_module_has_a_row() -> None:
    missing = unnamed(modules(), named(prose(DOC)))
    assert missing == [], f"docs/architecture.md names no row for: {', '.join(missing)}"


def test_the_check_catches_an_unnamed_module(tmp_path: Path) -> None:
    """A module the document does not name is reported; a pattern covers a split module."""
    (tmp_path / "server").mkdir()
    for name in ("store.py", "store_runs.py", "hub.py", "__init__.py"):
        (tmp_path / "server" / name).write_text("", encoding="utf-8")
    (tmp_path / "web" / "js").mkdir(parents=True)
    (tmp_path / "web" / "js" / "app.js").write_text("", encoding="utf-8")
    spans = named("| `server/store*.py` | the SQL |\n| `web/js/app.js` | the page |\n")
    assert unnamed(modules(tmp_path), spans) == ["server/hub.py"]


# What "Where to add …" tells a newcomer to edit: (file inside the package, a name in it).
WHERE_TO_ADD = [
    ("protocol/tools.py", "ToolKind"), ("protocol/tools.py", "_KEY_KINDS"),
    ("protocol/tools.py", "_NAME_KINDS"), ("protocol/tools.py", "_OUTCOMES"),
    ("protocol/tools.py", "summary"), ("protocol/acp_mapper.py", "_KEYS"),
    ("sim/executors.py", "EXECUTORS"), ("sim/executors.py", "Executor"),
    ("sim/planner.py", "RULES"), ("server/webui.py", "view_of"),
    ("web/js/cards.js", "LABELS"), ("web/js/cards.js", "body"),
    ("runtime/transport.py", "open_turn"), ("runtime/transport.py", "_NAMED"),
    ("runtime/transport.py", "transport_for"), ("config.py", "TRANSPORT_NAMES"),
    ("runtime/outcome.py", "client_result_event"), ("runtime/run.py", "spawn"),
    ("client.py", "_AcpHolder"), ("client.py", "_open_turn"),
    ("cli/views.py", "TurnView"), ("cli/views.py", "make_view"),
    ("protocol/changes.py", "ToolCallOpened"), ("protocol/changes.py", "ToolCallChanged"),
]


def test_where_to_add_names_what_exists() -> None:
    """Every file and name the "Where to add" section cites is there, and the name is in the file."""
    text = prose(DOC)
    section = text[text.index("## Where to add"):text.index("## Modules")]
    for path, name in WHERE_TO_ADD:
        assert f"`{path}`" in section or f"`{path}`'s" in section, path
        assert name in section, name
        source = (PACKAGE / path).read_text(encoding="utf-8")
        assert re.search(rf"\b{re.escape(name)}\b", source), f"{name} is not in {path}"
