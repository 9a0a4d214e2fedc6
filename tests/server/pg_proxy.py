"""A TCP proxy in front of PostgreSQL, to make its database fail for one test without
stopping the cluster the other tests use (:class:`PgProxy`, :func:`proxied`)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

TERMINATE = b"X\x00\x00\x00\x04"
"""PostgreSQL's Terminate message (a client's goodbye: ``X``, its length 4), nothing after it."""


class PgProxy:
    """A TCP proxy to PostgreSQL on 127.0.0.1, in a thread of its own: :meth:`stop` is the
    database stopped, for the server that connects through it (its connections cut, new ones
    refused: ``ConnectionRefusedError``, which SQLAlchemy lets through), without stopping the
    cluster other tests use; :meth:`start` brings it back on the same port. :meth:`hold` is a
    host that stops answering (packets dropped): connections stay open, new ones are taken,
    and nothing is forwarded either way until :meth:`release` cuts them. :meth:`hold_open` holds
    only the connections open now (a firewall that dropped them): new ones are forwarded.
    :meth:`vanish` is a host gone without a word.
    :meth:`goodbyes` says, per client connection forwarded, whether the client said goodbye
    (PostgreSQL's ``Terminate``, :data:`TERMINATE`, as its last bytes) before it ended.

    Example (the server's URL through it)::

        proxy = PgProxy("127.0.0.1", 5432)
        proxy.start()  # then connect to 127.0.0.1:proxy.port
        proxy.close()
    """

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.server: asyncio.Server | None = None
        self.open: set[asyncio.StreamWriter] = set()
        self.holding = False
        self.held: set[asyncio.StreamWriter] = set()  # (hold_open) the clients' ends held
        self.silent_on: bytes | None = None  # (hold_on) what, sent by a client, holds all
        # (goodbyes) the client connections forwarded, and per one ended whether it said goodbye
        self.ended = threading.Condition()
        self.forwarded = 0
        self.said_goodbye: list[bool] = []

    def _call(self, coro: Any) -> None:
        asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    def start(self) -> None:
        self._call(self._start())

    async def _start(self) -> None:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.holding:  # taken, never answered
            self.open.add(writer)
            try:
                while await reader.read(65536):
                    pass
            except OSError:
                pass
            finally:
                self.open.discard(writer)  # (ended: vanish() and stop() must not touch it)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.transport.abort()
            return
        self.open |= {writer, up_writer}
        with self.ended:
            self.forwarded += 1
        last = bytearray()  # the client's last bytes (as many as TERMINATE's)
        tail = bytearray()  # the client's last 64 bytes (where hold_on's marker may begin)
        client_left = False  # the client ended its connection (not the proxy, for the database)
        waited = False  # the client was there still when the database ended the connection

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            nonlocal client_left, waited
            try:
                while data := await src.read(65536):
                    if src is reader:
                        last[:] = (last + data)[-len(TERMINATE):]
                        marker = self.silent_on
                        # (the marker may come split over two reads: looked for across them)
                        if marker is not None and marker in bytes(tail) + data:
                            self.holding = True  # (not forwarded: the host is silent now)
                        tail[:] = (tail + data)[-64:]
                    if self.holding or writer in self.held:
                        continue  # dropped
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                if src is reader:
                    client_left = True
                else:
                    waited = not client_left and _still_there(writer)
                dst.transport.abort()

        try:
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        finally:
            self.open -= {writer, up_writer}  # (ended: vanish() and stop() must not touch it)
            with self.ended:
                self.said_goodbye.append(bytes(last) == TERMINATE and waited)
                self.ended.notify_all()

    def goodbyes(self, timeout: float = 60.0) -> list[bool]:
        """Once every client connection forwarded so far has ended (waited for up to
        ``timeout`` seconds: a hang's limit), per one whether the client closed it gracefully,
        in the order they ended: it sent PostgreSQL's goodbye (:data:`TERMINATE`) as its last
        bytes and was still there when the database ended the connection (a graceful close
        waits for that). A connection dropped did not: asyncpg's ``terminate()`` sends the
        goodbye too, if it can, but hangs up at once."""
        with self.ended:
            assert self.ended.wait_for(lambda: len(self.said_goodbye) >= self.forwarded,
                                       timeout), (self.forwarded, self.said_goodbye)
            return list(self.said_goodbye)

    def stop(self) -> None:
        self._call(self._stop())

    async def _stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.open:
            writer.transport.abort()
        self.open.clear()
        await self.server.wait_closed()

    def hold(self) -> None:
        self.holding = True

    def hold_on(self, sent: bytes) -> None:
        """The host stops answering (:meth:`hold`) as soon as a client sends ``sent``, before it
        is forwarded: e.g. the ``application_name`` of a connection's start-up message, to go
        silent at the very step that opens that connection, whatever ran before it (``sent``:
        64 bytes at most, seen even when split over two reads)."""
        assert 0 < len(sent) <= 64, "hold_on's marker: 1 to 64 bytes"
        self.silent_on = sent

    def clients_ended(self, timeout: float = 60.0) -> bool:
        """Whether every client connection (forwarded or held) has ended, waited for up to
        ``timeout`` seconds (a hang's limit: polled)."""
        deadline = time.monotonic() + timeout
        while True:
            if not asyncio.run_coroutine_threadsafe(self._any_open(), self.loop).result(30):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    async def _any_open(self) -> bool:
        return bool(self.open)

    def hold_open(self) -> None:
        self._call(self._hold_open())

    async def _hold_open(self) -> None:
        self.held |= self.open

    def vanish(self) -> None:
        """The host is gone without a word (a crash, a reboot, a NAT's entry dropped): every
        client connection open now is closed on the proxy's side silently, no FIN nor RST sent
        (Linux's ``TCP_REPAIR``, which needs ``CAP_NET_ADMIN``: :func:`can_vanish`); their
        upstream connections are cut. A client waiting for an answer hears nothing, ever, unless
        it sends something: its next packet (a query, a TCP keepalive probe) gets a reset."""
        self._call(self._vanish())

    async def _vanish(self) -> None:
        # what a client sent and the proxy's kernel has not acknowledged yet would be sent
        # again, to a port that resets it: the client would learn of it without sending
        # anything new (its data acknowledged first, as a host's kernel does before it goes)
        clients = [w.get_extra_info("peername")[1] for w in self.open
                   if w.get_extra_info("sockname")[1] == self.port]  # (cached by asyncio)
        for _ in range(3000):  # (10 ms each: a hang's limit only)
            if not any(_unacknowledged(port, self.port) for port in clients):
                break
            await asyncio.sleep(0.01)
        for writer in list(self.open):
            sock = writer.get_extra_info("socket")
            if (sock is not None and not writer.transport.is_closing()
                    and writer.get_extra_info("sockname")[1] == self.port):  # a client's end
                sock.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR, 1)
            writer.transport.abort()
        self.open.clear()

    def release(self) -> None:
        self._call(self._release())

    async def _release(self) -> None:
        self.holding = False
        self.silent_on = None
        self.held.clear()
        for writer in self.open:
            writer.transport.abort()
        self.open.clear()

    def close(self) -> None:
        if self.server is not None and self.server.is_serving():
            self.stop()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(30)
        self.loop.close()


def _still_there(writer: asyncio.StreamWriter) -> bool:
    """Whether the peer of ``writer``'s socket has not hung up (no end of its stream, nor a
    reset, waiting to be read): asked of the kernel, whatever asyncio has read yet."""
    sock = writer.get_extra_info("socket")
    try:
        with socket.fromfd(sock.fileno(), sock.family, sock.type) as peek:
            return peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
    except BlockingIOError:  # nothing to read: open
        return True
    except OSError:  # reset, or closed here already (the proxy stopped)
        return False


def _unacknowledged(port: int, peer_port: int) -> int:
    """The bytes the TCP socket on 127.0.0.1:``port`` connected to ``peer_port`` sent and
    its peer has not acknowledged yet (Linux's ``/proc/net/tcp``: its ``tx_queue``)."""
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            fields = line.split()
            local, remote = fields[1].split(":")[1], fields[2].split(":")[1]
            if (int(local, 16), int(remote, 16)) == (port, peer_port):
                return int(fields[4].split(":")[0], 16)
    return 0


TCP_REPAIR = 19
"""Linux's socket option (``linux/tcp.h``): a socket closed in repair mode sends nothing."""


def can_vanish() -> bool:
    """Whether :meth:`PgProxy.vanish` can work here (``TCP_REPAIR`` is allowed: Linux, and
    ``CAP_NET_ADMIN``)."""
    with socket.socket() as sock:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, TCP_REPAIR, 1)
        except OSError:
            return False
    return True


@contextlib.contextmanager
def proxied(db_url: str) -> Iterator[tuple[PgProxy, str]]:
    """A started :class:`PgProxy` in front of ``db_url``'s PostgreSQL, and the URL through it;
    released (its held connections cut) and closed on the way out."""
    from sqlalchemy.engine import make_url

    url = make_url(db_url)
    proxy = PgProxy(url.host or "127.0.0.1", url.port or 5432)
    proxy.start()
    try:
        yield proxy, url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    finally:
        proxy.release()
        proxy.close()
