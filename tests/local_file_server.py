"""A real HTTP server on 127.0.0.1 that serves one file with Range support, for download tests.

Its state lets a test shape the next responses: ignore Range requests, cut a body short, or stall
mid-body until released (to interrupt a download in flight); it records every Range header seen.
"""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class ServerState:
    honour_range: bool = True
    truncate_at: int | None = None  # send only this many body bytes, then close
    stall_after: int | None = None  # send this many body bytes, then hang until `released`
    released: threading.Event = field(default_factory=threading.Event)
    range_headers: list[str | None] = field(default_factory=list)


@dataclass
class FileServer:
    url: str
    state: ServerState


class _Handler(http.server.BaseHTTPRequestHandler):
    # Set on a per-server subclass: each path served ("/<name>") and its bytes.
    files: dict[str, bytes]
    state: ServerState

    def do_GET(self) -> None:
        if self.path not in self.files:
            self.send_error(404)
            return
        payload, state = self.files[self.path], self.state
        range_header = self.headers.get("Range")
        state.range_headers.append(range_header)
        start = 0
        if range_header and state.honour_range:
            start = int(range_header.removeprefix("bytes=").rstrip("-"))
            if start >= len(payload):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(payload)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(payload) - 1}/{len(payload)}")
        else:
            self.send_response(200)
        body = payload[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if state.truncate_at is not None:
            self.wfile.write(body[: state.truncate_at])
            self.close_connection = True
        elif state.stall_after is not None:
            self.wfile.write(body[: state.stall_after])
            self.wfile.flush()
            state.released.wait(timeout=60)
            self.close_connection = True
        else:
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep test output clean


@contextmanager
def serve_file(name: str, payload: bytes) -> Iterator[FileServer]:
    with serve_files({name: payload}) as server:
        yield FileServer(f"{server.url}/{name}", server.state)


@contextmanager
def serve_files(files: dict[str, bytes]) -> Iterator[FileServer]:
    """Several files under one address; the FileServer's url is the directory's (no final /)."""
    state = ServerState()
    attributes = {"files": {f"/{name}": data for name, data in files.items()}, "state": state}
    handler = type("Handler", (_Handler,), attributes)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield FileServer(f"http://127.0.0.1:{httpd.server_address[1]}", state)
    finally:
        state.released.set()  # a stalled response must not outlive the test
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def closed_port_url(name: str) -> str:
    """A URL on a port that was free a moment ago: connecting is refused at once, as offline."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/{name}"
