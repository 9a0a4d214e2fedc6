"""The store owns all SQL: no module outside ``server/store/`` imports SQLAlchemy or a database
driver (the schema aside: ``server/models.py`` and the migrations; and the database URLs'
module, which reads URLs with SQLAlchemy's URL class and its dialect's reading of one, and
psycopg's URL parser, and nothing else of them), and the store imports
neither the fold (``server/turns.py``) nor the page's views: only the protocol's types, the
schema and itself.

Every import of every module under ``src/`` is read (the ones inside functions and
``if TYPE_CHECKING:`` included), so a new statement composed elsewhere fails here.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
DATABASE_LIBRARIES = ("sqlalchemy", "asyncpg", "aiosqlite", "sqlite3", "psycopg", "alembic")
SCHEMA = ("cursor_agent_api.server.models", "cursor_agent_api.server.migrations")
STORE = "cursor_agent_api.server.store"
STORE_MAY_IMPORT = (
    STORE,
    "cursor_agent_api.protocol",
    "cursor_agent_api.server.models",
    "cursor_agent_api.server.sqlite_file",
    "cursor_agent_api.database_urls",
    "cursor_agent_api.server_options",  # the workers' live window, shared with the CLI
)
# The URLs' module, outside the server so the CLI can check a URL before importing it, reads
# URLs as SQLAlchemy does, with its URL class and its asyncpg dialect's reading of one, and
# checks that libpq can read the URL it writes (psycopg's conninfo parser): no SQL.
URLS = "cursor_agent_api.database_urls"
URLS_MAY_IMPORT = ("sqlalchemy.engine.url", "sqlalchemy.exc",
                   "sqlalchemy.dialects.postgresql.asyncpg", "psycopg.conninfo")


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _within(name: str, prefixes: tuple[str, ...] | str) -> bool:
    prefixes = (prefixes,) if isinstance(prefixes, str) else prefixes
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def imports(path: Path, root: Path = SRC) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved; for
    ``from pkg import name``, both ``pkg`` and ``pkg.name``).

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp()); (root / "a" / "b").mkdir(parents=True)
    >>> _ = (root / "a" / "b" / "c.py").write_text("from ..x import y\\nimport z.w\\n")
    >>> sorted(imports(root / "a" / "b" / "c.py", root))
    ['a.x', 'a.x.y', 'z.w']
    """
    name = _module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def violations(root: Path = SRC) -> list[str]:
    """What breaks the rule, one line per module and import."""
    out = []
    for path in sorted(root.rglob("*.py")):
        name = _module_name(path, root)
        for imported in sorted(imports(path, root)):
            if _within(name, STORE):
                if _within(imported, "cursor_agent_api") and not _within(imported, STORE_MAY_IMPORT):
                    out.append(f"{name} (the store) imports {imported}")
            elif name == URLS and _within(imported, URLS_MAY_IMPORT):
                continue
            elif not _within(name, SCHEMA) and _within(imported, DATABASE_LIBRARIES):
                out.append(f"{name} imports {imported}: its SQL belongs in {STORE}")
    return out


def test_only_the_store_speaks_sql() -> None:
    assert violations() == []


def test_the_check_catches_sql_elsewhere_and_a_store_that_imports_the_fold(tmp_path: Path) -> None:
    server = tmp_path / "cursor_agent_api" / "server"
    (server / "store").mkdir(parents=True)
    (server / "migrations").mkdir()
    files = {
        "store/__init__.py": "from .rows import x\n",
        "store/rows.py": "from sqlalchemy import select\nfrom ..models import chats\n"
                         "from ...protocol.changes import Change\n",
        "store/folded.py": "if TYPE_CHECKING:\n    from ..turns import FoldedBatch\n",
        "store/view.py": "def f():\n    from cursor_agent_api.server import webui\n",
        "models.py": "import sqlalchemy as sa\n",
        "migrations/env.py": "from sqlalchemy import text\n",
        "auth.py": "from .store import Store\n\ndef f():\n    from sqlalchemy.exc import SQLAlchemyError\n",
        "notify.py": "import asyncpg\n",
    }
    for rel, text in files.items():
        (server / rel).write_text(text, encoding="utf-8")
    assert violations(tmp_path) == [
        "cursor_agent_api.server.auth imports sqlalchemy.exc: "
        "its SQL belongs in cursor_agent_api.server.store",
        "cursor_agent_api.server.auth imports sqlalchemy.exc.SQLAlchemyError: "
        "its SQL belongs in cursor_agent_api.server.store",
        "cursor_agent_api.server.notify imports asyncpg: its SQL belongs in cursor_agent_api.server.store",
        "cursor_agent_api.server.store.folded (the store) imports cursor_agent_api.server.turns",
        "cursor_agent_api.server.store.folded (the store) imports cursor_agent_api.server.turns.FoldedBatch",
        "cursor_agent_api.server.store.view (the store) imports cursor_agent_api.server",
        "cursor_agent_api.server.store.view (the store) imports cursor_agent_api.server.webui",
    ]
