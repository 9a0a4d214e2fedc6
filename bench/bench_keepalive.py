"""Keep-alive latency (issue 11, point 7): ``serve`` beside a plain uvicorn app, in one run.

Every request after the first on a kept-alive connection used to take ~44 ms against 0.6 ms
for plain uvicorn: ``serve`` made its listening socket with protocol 0, and asyncio sets
``TCP_NODELAY`` on accepted connections only for ``IPPROTO_TCP`` sockets, so Nagle's algorithm
held the body back until the client's delayed ACK. Three servers, each a subprocess on a
random loopback port:

* ``serve``: the real ``cursor-agent-api serve --simulate`` (its socket from
  :func:`cursor_agent_api.cli.serve.listen_socket`);
* ``plain uvicorn``: a one-route Starlette app run by ``uvicorn.run`` (uvicorn binds itself);
* ``old socket``: the project's app on a socket made the way ``serve`` made it before the fix
  (``socket.socket(family, SOCK_STREAM)``, no option) — the regression, for reference.

For each: ``--requests`` + 1 ``GET /api/health`` on one ``http.client`` connection; the first
(connection set-up) is dropped, the median and the 90th percentile of the rest are reported.
Goal: the median for ``serve`` under 2 ms on loopback.

Usage::

    .venv/bin/python bench/bench_keepalive.py            # 20 requests per server
    .venv/bin/python bench/bench_keepalive.py --requests 200
"""

from __future__ import annotations

import argparse
import http.client
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

BIN = Path(sys.executable).parent
TOKEN = uuid.uuid4().hex

PLAIN_APP = """
import sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def health(request):
    return JSONResponse({"status": "ok"})

app = Starlette(routes=[Route("/api/health", health)])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"""

OLD_SOCKET_APP = """
import asyncio, socket, sys, uvicorn
from cursor_agent_api.server import ServerSettings, create_app
sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # as serve did before the fix
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen(128)
settings = ServerSettings(token=sys.argv[2], port=int(sys.argv[1]), database_url=sys.argv[3],
                          simulate=True)
config = uvicorn.Config(create_app(settings), log_level="warning", server_header=False)
asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/health", headers={"Authorization": f"token {TOKEN}"})
            conn.getresponse().read()
            conn.close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("server did not start")


def start_serve(tmp: Path) -> tuple[subprocess.Popen[bytes], int]:
    cmd = [
        str(BIN / "cursor-agent-api"),
        "serve",
        "--simulate",
        "--port",
        "0",
        "--token",
        TOKEN,
        "--database-url",
        f"sqlite+aiosqlite:///{tmp / 'serve.sqlite3'}",
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp, start_new_session=True
    )
    assert proc.stdout is not None
    buf = b""
    deadline = time.monotonic() + 60
    while b"Open: " not in buf or not buf.endswith(b"\n"):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"serve did not start: {buf!r}")
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            buf += os.read(proc.stdout.fileno(), 4096)
    line = next(x for x in buf.decode().splitlines() if x.startswith("Open: "))
    port = int(line[6:].split("/?")[0].rsplit(":", 1)[1])
    return proc, port


def start_script(script: str, *args: str, cwd: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(port), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        start_new_session=True,
    )
    wait_listening(port, proc)
    return proc, port


def measure(port: int, requests: int) -> list[float]:
    """Milliseconds per request on one kept-alive connection (the first one dropped)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"token {TOKEN}"}
    times = []
    try:
        for _ in range(requests + 1):
            t0 = time.perf_counter()
            conn.request("GET", "/api/health", headers=headers)
            resp = conn.getresponse()
            resp.read()
            times.append((time.perf_counter() - t0) * 1000)
            assert resp.status == 200, resp.status
            assert not resp.will_close, "the connection must stay open"
    finally:
        conn.close()
    return times[1:]


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(30)
    if proc.stdout is not None:
        proc.stdout.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3, help="measurements per server, interleaved")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        servers: dict[str, tuple[subprocess.Popen[bytes], int]] = {}
        try:
            servers["serve"] = start_serve(tmp)
            servers["plain uvicorn"] = start_script(PLAIN_APP, cwd=tmp)
            servers["old socket"] = start_script(
                OLD_SOCKET_APP, TOKEN, f"sqlite+aiosqlite:///{tmp / 'old.sqlite3'}", cwd=tmp
            )
            results: dict[str, list[float]] = {name: [] for name in servers}
            for _ in range(args.rounds):  # interleaved, so that machine noise hits all alike
                for name, (_, port) in servers.items():
                    results[name] += measure(port, args.requests)
        finally:
            for proc, _ in servers.values():
                stop(proc)
    print(f"GET /api/health, {args.requests} requests per connection after the first, {args.rounds} rounds")
    print(f"{'server':<16}{'median ms':>12}{'p90 ms':>10}{'max ms':>10}")
    medians = {}
    for name, times in results.items():
        times.sort()
        medians[name] = statistics.median(times)
        p90 = times[int(len(times) * 0.9) - 1]
        print(f"{name:<16}{medians[name]:>12.2f}{p90:>10.2f}{times[-1]:>10.2f}")
    ratio = medians["serve"] / medians["plain uvicorn"]
    old = medians["old socket"] / medians["serve"]
    print(f"serve / plain uvicorn: {ratio:.2f}x; old socket / serve: {old:.0f}x")
    goal = medians["serve"] < 2.0
    print(f"goal (serve median < 2 ms): {'met' if goal else 'NOT met'}")
    return 0 if goal else 1


if __name__ == "__main__":
    sys.exit(main())
