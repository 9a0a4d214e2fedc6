"""A database URL's password is never shown, even with an ``@`` left unencoded in it: the
URL a server's or a worker's error line names is hidden up to the authority's last ``@``
(SQLAlchemy reads the first ``@`` as the end of the password: ``u:Sec@ret@host`` was shown as
``u:***@ret@host``, audit 7)."""

from __future__ import annotations

import pytest

from cursor_agent_api.cli.worker import stopped_message
from cursor_agent_api.database_urls import database_url_problem, shown_url

SECRET = "Sec@ret"


@pytest.mark.parametrize("url, shown", [
    ("postgresql+asyncpg://u:Sec@ret@127.0.0.1:54329/db", "postgresql+asyncpg://u:***@127.0.0.1:54329/db"),
    ("postgresql+asyncpg://u:S@c@ret@db/app?sslmode=require", "postgresql+asyncpg://u:***@db/app?…"),
    ("postgresql+asyncpg://u:plain@db/app", "postgresql+asyncpg://u:***@db/app"),
])
def test_the_url_shown_hides_the_password_up_to_the_last_at(url: str, shown: str) -> None:
    assert shown_url(url) == shown
    line = stopped_message(TimeoutError(), url, started=True)
    assert shown in line and "ret@" not in line, line


def test_a_url_refused_hides_it_too() -> None:
    problem = database_url_problem(f"postgres://u:{SECRET}@db/app")
    assert problem is not None and "ret" not in problem, problem
    assert "postgresql+asyncpg://u:***@db/app" in problem, problem
