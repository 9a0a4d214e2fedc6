"""Many connections or slow clients do not take the server down (audit 4, finding 2):
unfinished requests time out, connections past the cap are answered 503 and closed, and a lack
of file descriptors is one line now and then, not a traceback per slot of the backlog
(``server/connections.py``)."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from server_helpers import Server, poll

from cursor_agent_api.server.connections import GuardedHttp, guarded_http

HANG = 60.0
"""A hang's limit only: what is waited for is the server closing the connection."""


async def _app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers 200 once the whole body is read (``disconnected`` if it never is)."""
    if scope["type"] != "http":
        return
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            _app.disconnects.append(scope["path"])  # type: ignore[attr-defined]
            return
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


_app.disconnects = []  # type: ignore[attr-defined]


@pytest.fixture
def serve() -> Iterator[Any]:
    """Start uvicorn (in a thread, port 0) with a :class:`GuardedHttp` of the given figures."""
    started: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(protocol: type[GuardedHttp], app: Any = _app) -> tuple[uvicorn.Server, int]:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                lifespan="off", http=protocol)  # type: ignore[arg-type]
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        started.append((server, thread))
        poll(lambda: server.started or not thread.is_alive(), timeout=HANG)
        assert server.started
        return server, server.servers[0].sockets[0].getsockname()[1]

    yield start
    for server, thread in started:
        server.should_exit = True
        thread.join(HANG)
        assert not thread.is_alive()


def _until_closed(s: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    s.settimeout(HANG)
    got = b""
    while data := s.recv(4096):
        got += data
    return got


def test_half_a_request_is_timed_out_by_serve(server: Server) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answer = _until_closed(s)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b'"code":"request_timeout"' in answer
    with server.client() as c:
        assert c.get("/api/health").status_code == 200


def test_the_next_request_of_a_kept_alive_connection_is_timed(serve: Any) -> None:
    _, port = serve(guarded_http(head_timeout=2.0))  # (the first request's, sent at once)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        first = b""
        while not first.endswith(b"hi"):
            first += s.recv(4096)
        assert first.startswith(b"HTTP/1.1 200 ")
        s.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\n")  # (its headers never end)
        assert _until_closed(s).startswith(b"HTTP/1.1 408 ")


def test_a_body_that_stops_is_cut(serve: Any) -> None:
    _, port = serve(guarded_http(body_timeout=0.2))
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /stalled HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhalf")
        assert _until_closed(s) == b""  # (the app had begun: no 408 of the server's own)
    poll(lambda: "/stalled" in _app.disconnects, timeout=HANG)  # type: ignore[attr-defined]


def test_connections_past_the_cap_are_answered_and_closed(serve: Any) -> None:
    server, port = serve(guarded_http(max_connections=3, head_timeout=HANG))
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
    try:
        for s in held:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        poll(lambda: len(server.server_state.connections) == 3, timeout=HANG)
        with socket.create_connection(("127.0.0.1", port)) as extra:
            refused = _until_closed(extra)
        assert refused.startswith(b"HTTP/1.1 503 "), refused
        assert b'"code":"too_many_connections"' in refused
    finally:
        for s in held:
            s.close()
    poll(lambda: not server.server_state.connections, timeout=HANG)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        assert _until_closed(s).startswith(b"HTTP/1.1 200 ")


ACCEPT_FLOOD = textwrap.dedent("""
    import asyncio, logging, resource, socket, subprocess, sys
    from cursor_agent_api.server.connections import AcceptErrors
    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(message)s")
    if sys.argv[1] == "guarded":
        logging.getLogger("asyncio").addFilter(AcceptErrors())
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (40, hard))  # (the client raises its own back)

    async def main():
        held = []
        async def hold(reader, writer):
            held.append(writer)
        server = await asyncio.start_server(hold, "127.0.0.1", 0, backlog=200)
        port = server.sockets[0].getsockname()[1]
        # another process (its own descriptors) opens 100 connections and holds them
        client = subprocess.Popen([sys.executable, "-c",
            "import resource, socket, sys; resource.setrlimit(resource.RLIMIT_NOFILE, (%d, %d));"
            " s = [socket.create_connection(('127.0.0.1', %d)) for _ in range(100)];"
            " print('open', flush=True); sys.stdin.read()" % (hard, hard, port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        await asyncio.get_running_loop().run_in_executor(None, client.stdout.readline)
        await asyncio.sleep(2.5)  # (the loop retries accept() every second: two retries)
        client.stdin.close(); client.wait()
        server.close()  # (with retries of accept() pending: asyncio's traceback each, unguarded)
        await asyncio.sleep(1.5)
    asyncio.run(main())
""")


@pytest.mark.parametrize("mode", ["guarded", "asyncio"])
def test_no_file_descriptors_left_is_one_line(mode: str) -> None:
    """With ``AcceptErrors``, a lack of descriptors at accept() is one WARNING line (then one
    per 10 s), no traceback; without it (asyncio as it is), one traceback per slot."""
    done = subprocess.run([sys.executable, "-c", ACCEPT_FLOOD, mode], capture_output=True,
                          text=True, timeout=HANG)
    assert done.returncode == 0, done.stderr[-2000:]
    if mode == "asyncio":  # (what the test shows: the flood it stops)
        assert done.stderr.count("Traceback") > 100
        return
    assert done.stderr.count("Traceback") == 0, done.stderr[-2000:]
    lines = done.stderr.splitlines()
    # one line (then one per 10 s, should the machine be so slow that the 2.5 s take that long)
    assert lines[0] == ("WARNING cannot accept connections: [Errno 24] Too many open files "
                        "(retried every second)"), lines
    assert all(line.startswith("WARNING cannot accept connections: ") for line in lines), lines
    assert len(lines) <= 3, lines


async def _refuse(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers 401 at once, reading no body (as the token check does)."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 401, "headers": [(b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})


def test_what_was_read_of_a_refused_body_is_let_go(serve: Any) -> None:
    server, port = serve(guarded_http(), _refuse)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.settimeout(HANG)
        chunk = b"x" * 65536
        s.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + (b"%x\r\n" % len(chunk) + chunk + b"\r\n") * 4)  # (never the last chunk)
        assert s.recv(4096).startswith(b"HTTP/1.1 401 ")
        (connection,) = server.server_state.connections
        # (uvicorn read up to 64 KiB ahead of the app, and kept it with the request)
        poll(lambda: not connection.cycle.body, timeout=HANG)  # type: ignore[attr-defined]


def _answers(s: socket.socket, count: int) -> list[bytes]:
    """The bodies of the next ``count`` answers (each with a Content-Length)."""
    s.settimeout(HANG)
    got, bodies = b"", []
    while len(bodies) < count:
        head, sep, rest = got.partition(b"\r\n\r\n")
        if sep:
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            if len(rest) >= length:
                bodies.append(rest[:length])
                got = rest[length:]
                continue
        data = s.recv(4096)
        assert data, (got, bodies)
        got += data
    return bodies


def test_a_pipelined_requests_body_is_kept(serve: Any) -> None:
    """A request pipelined behind another, its body begun: the first answer's end let go of
    the newest request's body (review 39: HELLOWORLD became WORLD)."""
    _, port = serve(guarded_http())
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /one HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\none"
                  b"POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nHELLO")
        assert _answers(s, 1) == [b"one"]
        s.sendall(b"WORLD")
        assert _answers(s, 1) == [b"HELLOWORLD"]


async def _slow_answer(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"12")]})
    await send({"type": "http.response.body", "body": b"part1-", "more_body": True})
    await asyncio.sleep(1.0)  # (five head timeouts: the second request's timer fires meanwhile)
    await send({"type": "http.response.body", "body": b"part2."})


def test_no_408_inside_an_answer_under_way(serve: Any) -> None:
    """The next request's headers unfinished while the answer before it streams: its timeout
    waits for that answer's end (review 39: the 408 was written inside it)."""
    _, port = serve(guarded_http(head_timeout=0.2), _slow_answer)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n")
        got = _until_closed(s)
    first, _, after = got.partition(b"part1-part2.")
    assert first.startswith(b"HTTP/1.1 200 ") and b"408" not in first, got
    assert after.startswith(b"HTTP/1.1 408 "), got


def test_a_body_that_keeps_coming_is_not_cut(serve: Any) -> None:
    """The body's timeout is a silence's, not the whole body's (review 39: a 900 KB upload
    sent steadily over 70 s was cut at 60 s, with no answer and nothing logged)."""
    _, port = serve(guarded_http(body_timeout=1.0))
    chunks = 25
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"POST /steady HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % chunks)
        for _ in range(chunks):  # 2.5 s in all, 0.1 s apart
            s.sendall(b"x")
            time.sleep(0.1)
        assert _answers(s, 1) == [b"x" * chunks]
