"""A local HTTP server with Range support that counts what it serves and can misbehave.

Used by tests/test_remote.py and bench/remote.py: files are served from a directory;
``misbehave`` maps a URL path to one of ``"ignore-range"`` (200 with the whole body),
``"short"`` (a 206 with fewer bytes than asked), ``"long"`` (a few bytes more than
asked), or ``("redirect", url)`` (only for requests addressed to 127.0.0.1).
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def _read(file: Path, start: int, end: int) -> bytes:
    with open(file, "rb") as fh:
        fh.seek(start)
        return fh.read(max(0, end - start))


class RangeServer:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.misbehave: dict[str, Any] = {}
        self.bytes_served = 0
        self.requests: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
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

            def _serve(self, body: bool) -> None:
                path = self.path.split("?", 1)[0]
                with server._lock:
                    server.requests.append((self.command, path, self.headers.get("Range")))
                rule = server.misbehave.get(path)
                host = (self.headers.get("Host") or "").split(":")[0]
                if isinstance(rule, tuple) and rule[0] == "redirect" and host == "127.0.0.1":
                    self.send_response(302)
                    self.send_header("Location", rule[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                file = (server.root / path.lstrip("/")).resolve()
                if not file.is_file() or server.root.resolve() not in file.parents:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                size = file.stat().st_size
                match = _RANGE.match(self.headers.get("Range") or "")
                if match and rule != "ignore-range":
                    start = int(match.group(1))
                    end = min(int(match.group(2)) + 1 if match.group(2) else size, size)
                    if rule == "short":
                        end = start + (end - start) // 2
                    elif rule == "long":
                        end = min(size, end + 7)
                    payload = _read(file, start, end) if body else b""
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
                else:
                    start, end = 0, size
                    payload = _read(file, 0, size) if body else b""
                    self.send_response(200)
                self.send_header("Content-Length", str(end - start))
                self.send_header("Accept-Ranges", "bytes")
                self.end_headers()
                if body:
                    with server._lock:  # counted before the client can see the bytes
                        server.bytes_served += len(payload)
                    self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> RangeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reset_counts(self) -> None:
        with self._lock:
            self.bytes_served = 0
            self.requests.clear()
