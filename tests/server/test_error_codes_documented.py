"""Every error code the server answers is in its table (docs/server.md, docs/websocket.md),
and every code of a table is one the server has."""

from __future__ import annotations

import re
from pathlib import Path

from cursor_agent_api.server import websocket
from cursor_agent_api.server.errors import CODES

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "src" / "cursor_agent_api" / "server"


def _table(doc: str, heading: str) -> set[str]:
    text = (ROOT / "docs" / doc).read_text()
    section = text[text.index(heading) :]
    section = section[: section.index("\n#", len(heading))]
    return set(re.findall(r"^\| `([a-z_]+)` \|", section, re.M)) - {"code"}  # (the header)


def test_the_http_codes_are_the_documented_ones() -> None:
    raised = set()
    for path in SERVER.rglob("*.py"):
        source = path.read_text()
        raised |= set(re.findall(r"ApiError\(\s*[^,()]+,\s*\"([a-z_]+)\"", source))
        raised |= set(re.findall(r"code=\"([a-z_]+)\"", source)) - set(websocket.ERROR_CODES)
    assert raised, "the scan finds the codes raised"
    assert raised <= set(CODES), raised - set(CODES)
    assert _table("server.md", "### Error codes") == set(CODES)


def test_the_websocket_codes_are_the_documented_ones() -> None:
    source = (SERVER / "websocket.py").read_text()
    used = set(re.findall(r"code=\"([a-z_]+)\"", source)) | set(
        re.findall(r"_refuse\(\s*ws,\s*CLOSE_\w+,\s*\"([a-z_]+)\"", source)
    )
    assert used == set(websocket.ERROR_CODES)
    assert _table("websocket.md", "### Error codes") == set(websocket.ERROR_CODES)
