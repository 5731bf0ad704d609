"""A TCP relay in front of a real server, for tests of a host that stops answering without closing
anything (a hung machine, a network partition): `freeze()` and nothing more crosses in either
direction, while every connection stays open and new ones are accepted and left unanswered."""

from __future__ import annotations

import contextlib
import socket
import threading


class TcpRelay:
    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._frozen = threading.Event()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()

    def freeze(self) -> None:
        self._frozen.set()

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            sockets = [self._listener, *self._sockets]
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.close()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            self._keep(client)
            if self._frozen.is_set():
                continue  # held open, never answered
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            self._keep(upstream)
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(
                    target=self._pump, args=(source, sink), name="relay-pump", daemon=True
                ).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while True:
            try:
                data = source.recv(1 << 16)
            except OSError:
                return
            if not data:  # one side closed: so does the other (while not frozen)
                if not self._frozen.is_set():
                    with contextlib.suppress(OSError):
                        sink.shutdown(socket.SHUT_WR)
                return
            if self._frozen.is_set():
                continue  # read and dropped: nothing crosses, nothing is closed
            try:
                sink.sendall(data)
            except OSError:
                return
