"""A TCP proxy in front of the server whose "network" a test can cut and restore.

Chromium's offline emulation leaves open WebSockets alone, so a network drop is made
here: :meth:`CuttableProxy.cut` closes every connection and refuses new ones until
:meth:`restore`. The browser sees what it sees when Wi-Fi drops and comes back.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class CuttableProxy:
    """Forward 127.0.0.1:<port> to ``target_port``; ``cut()``/``restore()`` the link."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.down = False
        self.closed = False
        self.lock = threading.Lock()
        self.conns: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self._spawn(self._accept)

    def _spawn(self, target: object, *args: object) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        t.start()
        self.threads.append(t)

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self.lock:
                self.conns += [client, upstream]
            self._spawn(self._pump, client, upstream)
            self._spawn(self._pump, upstream, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)

    def cut(self) -> None:
        """Drop every connection; refuse new ones until :meth:`restore`."""
        self.down = True
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def restore(self) -> None:
        """Let connections through again."""
        self.down = False

    def close(self) -> None:
        """Stop listening, drop everything and wait for the threads."""
        self.closed = True
        self.cut()
        self.listener.close()
        for t in self.threads:
            t.join(10)
