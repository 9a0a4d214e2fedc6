"""No body is read before the token check (audit 4, finding 3): a request that is not signed in
is refused from its headers, its body unread (a chunked body that never ends included, which
was buffered up to --max-body-bytes first); the paths open to all take a small body only;
signed-in clients keep --max-body-bytes."""

from __future__ import annotations

import socket

from server_helpers import Server

HANG = 60.0
"""A hang's limit only (the answer comes without waiting for the body, or never)."""


def _raw(server: Server, head: bytes, body: bytes) -> int:
    """Send ``head`` and the start of a chunked ``body`` that never ends; the answer's status."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=HANG) as s:
        s.sendall(head + b"Transfer-Encoding: chunked\r\nHost: 127.0.0.1\r\n\r\n"
                  + b"%x\r\n" % len(body) + body + b"\r\n")  # no final 0-chunk
        answer = b""
        while b"\r\n" not in answer:
            data = s.recv(4096)
            assert data, answer
            answer += data
        return int(answer.split(b" ", 2)[1])


def test_a_request_not_signed_in_is_refused_before_its_body(server: Server) -> None:
    status = _raw(server, b"POST /api/chats HTTP/1.1\r\nContent-Type: application/json\r\n",
                  b"x" * 65536)
    assert status == 401
    with server.client() as c:  # the server goes on
        assert c.get("/api/health").status_code == 200


def test_paths_open_to_all_take_a_small_body(server: Server) -> None:
    status = _raw(server, b"POST /api/auth/login HTTP/1.1\r\nContent-Type: application/json\r\n",
                  b"x" * 65536)
    assert status == 413
    with server.anon() as browser:  # the sign-in form still signs in
        assert browser.post("/api/auth/login", json={"token": server.token}).status_code == 204


def test_signed_in_clients_keep_the_body_limit(server: Server) -> None:
    with server.client() as c:
        big = c.post("/api/chats", content=b"x" * 1_048_577,
                     headers={"Content-Type": "application/json"})
        assert big.status_code == 413 and big.json()["code"] == "body_too_large"

        def chunks() -> object:
            yield b'{"workspace": "project", "title": "'
            yield b"t" * 20_000  # over the public limit, under --max-body-bytes
            yield b'"}'

        made = c.post("/api/chats", content=chunks(), headers={"Content-Type": "application/json"})
        assert made.status_code in (201, 422), made.text  # read whole, answered by the app
        assert made.json().get("code") != "body_too_large"
