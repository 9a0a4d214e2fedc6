"""``serve --host 0.0.0.0`` (or ``::``): the ``Open:`` link it prints must open.

It printed ``http://0.0.0.0:PORT/?code=…``, whose ``Host`` the server itself refuses (403,
the DNS-rebinding check). The link now names the loopback address, which the server accepts;
the allowlist still gets no wildcard. The app is driven in this process: nothing is bound.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cursor_agent_api.server import ServerSettings, create_app


@pytest.mark.parametrize(("host", "loopback"), [("0.0.0.0", "127.0.0.1"), ("::", "[::1]")])
def test_the_printed_link_signs_in(tmp_path: Path, host: str, loopback: str) -> None:
    settings = ServerSettings(token="x" * 24, host=host, port=8765, simulate=True,
                              database_url=f"sqlite+aiosqlite:///{tmp_path / 'db.sqlite3'}",
                              roots=(tmp_path,))
    app = create_app(settings)
    with TestClient(app, base_url=settings.base_url) as client:
        link = settings.login_url(app.state.auth.issue_code())  # what serve prints after Open:
        answer = client.get(link, follow_redirects=False)
        assert answer.status_code == 303, answer.text  # signed in: on to the page
        assert link.startswith(f"http://{loopback}:8765/?code=")
        assert "set-cookie" in answer.headers
        # the wildcard itself is still no Host the server accepts
        wildcard = f"[{host}]" if ":" in host else host
        refused = client.get("/api/health", headers={"host": f"{wildcard}:8765"})
        assert refused.status_code == 403
