"""An HTTP server on 127.0.0.1 that misbehaves on purpose (the remote reader's hostile tests).

Each URL path is served by ``modes[path]`` (a :class:`Mode`): the object's real bytes
(``data``) are what HEAD announces and a well-behaved server would send, and ``kind`` says
how the server answers a GET:

- ``"ok"``: a 206 with exactly the range asked for;
- ``"ignore-range"``: a 200 announcing ``body`` bytes (any size: generated as sent, never
  held) and streaming them;
- ``"long"``: a 206 whose Content-Length is the range's, then ``body`` bytes more than asked
  (a server that keeps sending);
- ``"long-undeclared"``: a 206 without Content-Length (the connection closes at the end)
  sending ``body`` bytes more than asked;
- ``"silent"``: the connection is accepted, nothing is ever answered (HEAD included);
- ``"silent-get"``: HEAD answered, a GET never;
- ``"slow"``: the headers after ``delay`` seconds, then the range;
- ``"drip"``: the range one byte every ``delay`` seconds;
- ``"stall"``: the headers and half the range, then silence.

A handler that waits (``silent``, ``slow``, ``drip``, ``stall``) gives up when the server
stops or after 120 s, so a test that fails does not leave threads behind for long.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")
_ZEROS = bytes(1 << 20)


@dataclass
class Mode:
    data: bytes
    kind: str = "ok"
    body: int = 0  # bytes sent past the range (long) or in all (ignore-range)
    delay: float = 0.0


class HostileServer:
    def __init__(self) -> None:
        self.modes: dict[str, Mode] = {}
        self.requests: list[tuple[str, str]] = []
        self.sent = 0  # body bytes written
        self._stop = threading.Event()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_HEAD(self) -> None:
                self._serve(body=False)

            def do_GET(self) -> None:
                self._serve(body=True)

            def _wait(self, seconds: float) -> bool:
                """Sleep ``seconds`` (False when the server is stopping)."""
                return not server._stop.wait(seconds)

            def _write(self, data: bytes) -> bool:
                try:
                    self.wfile.write(data)
                    self.wfile.flush()
                except OSError:  # the client hung up: what a good client does
                    return False
                with server._lock:
                    server.sent += len(data)
                return True

            def _stream(self, count: int) -> None:
                while count > 0 and not server._stop.is_set():
                    piece = _ZEROS[: min(count, len(_ZEROS))]
                    if not self._write(piece):
                        return
                    count -= len(piece)

            def _serve(self, body: bool) -> None:
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.requests.append((self.command, path))
                mode = server.modes.get(path)
                if mode is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if mode.kind == "silent" or (mode.kind == "silent-get" and body):
                    self._wait(120)
                    self.close_connection = True
                    return
                size = len(mode.data)
                if not body:
                    self.send_response(200)
                    self.send_header("Content-Length", str(size))
                    self.send_header("Accept-Ranges", "bytes")
                    self.end_headers()
                    return
                match = _RANGE.match(self.headers.get("Range") or "")
                start, end = 0, size
                if match:
                    start = int(match.group(1))
                    end = min(int(match.group(2)) + 1 if match.group(2) else size, size)
                payload = mode.data[start:end]
                if mode.kind == "slow" and not self._wait(mode.delay):
                    return
                if mode.kind == "ignore-range":
                    self.send_response(200)
                    self.send_header("Content-Length", str(mode.body))
                    self.end_headers()
                    self._stream(mode.body)
                    return
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
                if mode.kind == "long-undeclared":
                    self.send_header("Connection", "close")
                    self.close_connection = True
                else:
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if mode.kind == "drip":
                    for k in range(len(payload)):
                        if not self._wait(mode.delay) or not self._write(payload[k : k + 1]):
                            return
                    return
                if mode.kind == "stall":
                    self._write(payload[: len(payload) // 2])
                    self._wait(120)
                    self.close_connection = True
                    return
                if not self._write(payload):
                    return
                if mode.kind in ("long", "long-undeclared"):
                    self._stream(mode.body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.handle_error = lambda request, address: None  # type: ignore[method-assign]
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> HostileServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def wait_until(predicate: Any, seconds: float = 5.0) -> bool:
    """Poll ``predicate`` until true or ``seconds`` pass."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return bool(predicate())
