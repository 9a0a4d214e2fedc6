"""A page of another site cannot lock out the sign-in (audit 4, finding 1): a GET with
``?token=`` or ``?code=`` that a browser marks as made by another site (``Sec-Fetch-Site:
cross-site`` / ``same-site``, or a foreign ``Origin``) is refused, 403 ``cross_site_sign_in``,
without taking a unit of the sign-in throttle; what the user opens himself (``Sec-Fetch-Site:
none``), the server's own page (``same-origin``) and programs (neither header) are unchanged."""

from __future__ import annotations

import httpx
from server_helpers import Server

IMG = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors", "Sec-Fetch-Dest": "image"}
"""What a browser sends for ``<img src="http://127.0.0.1:PORT/?token=x">`` on another site."""


def test_another_sites_page_cannot_drain_the_throttle(server: Server) -> None:
    with server.anon(follow_redirects=False) as browser:
        # more than the bucket holds (10): each would have taken a unit
        answers = [browser.get("/", params={"token": f"wrong{i}"}, headers=IMG) for i in range(12)]
        answers += [browser.get("/api/health", params={"token": "x"},
                                headers={"Origin": "https://evil.example"}) for _ in range(3)]
        answers += [browser.get("/", params={"code": f"guess{i}"},
                                headers={"Sec-Fetch-Site": "same-site"}) for i in range(3)]
        answers += [browser.get("/", params={"token": "x"}, headers={"Origin": "null"})]
        assert {(a.status_code, a.json()["code"]) for a in answers} == {(403, "cross_site_sign_in")}
        assert "set-cookie" not in answers[0].headers
        assert "not counted" in answers[0].json()["detail"]
    # the right token, and the printed link opened from the terminal (Sec-Fetch-Site: none)
    with server.client() as c:
        assert c.get("/api/chats", params={"limit": 1}).status_code == 200
    with server.anon(follow_redirects=False) as browser:
        opened = browser.get("/", params={"code": server.login_code},
                             headers={"Sec-Fetch-Site": "none", "Sec-Fetch-Mode": "navigate"})
        assert opened.status_code == 303 and "set-cookie" in opened.headers, opened.text


def test_same_origin_and_programs_are_still_counted(server: Server) -> None:
    """A wrong token from the server's own page, or from a program, still takes its unit
    (docs/server.md: a local process flooding wrong tokens delays the right one)."""
    own = {"Sec-Fetch-Site": "same-origin", "Origin": server.url}
    with server.anon(follow_redirects=False) as browser:
        page = browser.get("/", params={"token": "wrong"}, headers={"Sec-Fetch-Site": "same-origin"})
        assert page.status_code == 303 and page.headers["location"] == "/?signin=refused"
        codes: list[int] = []
        while 429 not in codes and len(codes) < 100:  # (the bucket refills 1 per 5 s: a slow
            codes.append(browser.get("/api/health", params={"token": f"wrong{len(codes)}"},
                                     headers=own).status_code)  # machine needs a few more)
        assert set(codes[:-1]) == {401} and codes[-1] == 429 and len(codes) >= 10, codes
    with httpx.Client(base_url=server.url, timeout=60.0) as program:  # (neither header)
        codes = []
        while 429 not in codes and len(codes) < 100:
            codes.append(program.get("/api/chats", headers={"Authorization": "token wrong"}).status_code)
        assert set(codes) <= {401, 429} and codes[-1] == 429, codes
