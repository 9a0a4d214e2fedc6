"""The security headers the docs show (```http blocks of README.md and docs/*.md that hold a
``Content-Security-Policy``) are the headers the server sends with its page, word for word:
docs/web.md once showed a stale policy (``connect-src 'self' ws: wss:``, no ``form-action``)."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from docs_blocks import Block, blocks, doc_files

from cursor_agent_api.server import ServerSettings, create_app


def documented_headers(code: str) -> dict[str, str]:
    """An http block's headers, a value's continuation lines (indented) joined with a space."""
    headers: dict[str, str] = {}
    name = ""
    for line in code.splitlines():
        if line[:1].isspace() and name:
            headers[name] += " " + line.strip()
        elif ":" in line:
            name, _, value = line.partition(":")
            name = name.strip().lower()
            headers[name] = value.strip()
    return headers


HEADER_BLOCKS = [b for p in doc_files() for b in blocks(p)
                 if b.lang == "http" and "content-security-policy:" in b.code.lower()]


def test_some_doc_shows_the_headers() -> None:
    assert any(b.path.name == "web.md" for b in HEADER_BLOCKS)


@pytest.fixture(scope="module")
def page_headers(tmp_path_factory: pytest.TempPathFactory) -> httpx.Headers:
    db = tmp_path_factory.mktemp("db") / "db.sqlite3"
    app = create_app(ServerSettings(token="t" * 32, database_url=f"sqlite+aiosqlite:///{db}"))

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as c:
            return await c.get("/")

    response = asyncio.run(get())
    assert response.status_code == 200
    return response.headers


@pytest.mark.parametrize("block", HEADER_BLOCKS, ids=lambda b: f"{b.path.name}:{b.line}")
def test_the_documented_headers_are_the_ones_sent(block: Block,
                                                   page_headers: httpx.Headers) -> None:
    for name, value in documented_headers(block.code).items():
        assert page_headers.get(name) == value, f"{block.path.name}:{block.line}: {name}"
