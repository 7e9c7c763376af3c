"""A loopback HTTP server for the tests, serving the repository's samples/ like the Swift test
server does for the transcripts: /files/NAME[?chunk=N&delayMs=M] (with the caching parameters cc,
expires, vary, etag and lm, and 304s to matching conditional requests), /status/CODE,
/redirect/N/NAME (N redirects, then /files/NAME), and a few misbehaving routes (/hang,
/truncate/NAME). Ranges, as the Swift server: ?ranges=1 (Accept-Ranges, an ETag, 206 for
Range: bytes=N-), ?ranges=ignore, ?ranges=bad; ?drops=K&seed=S cuts the first K answers of a URL."""

from __future__ import annotations

import mimetypes
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Dict, Optional
from urllib.parse import parse_qs, urlparse

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "samples"


def caching_headers(body: bytes, query: Dict[str, str]) -> Dict[str, str]:
    """The caching (and X-Robots-Tag) headers a /files query asks for, as the Swift test server sends them."""
    import email.utils
    import hashlib
    headers: Dict[str, str] = {}
    for key, name in (("cc", "Cache-Control"), ("expires", "Expires"), ("vary", "Vary")):
        if key in query:
            headers[name] = query[key]
    if "etag" in query:
        headers["ETag"] = '"' + hashlib.sha1(body).hexdigest()[:16] + '"'
    if "lm" in query:
        midnight = (time.time() // 86_400 - 1) * 86_400
        headers["Last-Modified"] = email.utils.formatdate(midnight, usegmt=True)
    if "robots" in query:
        headers["X-Robots-Tag"] = query["robots"]
    return headers


class LoopbackServer:
    def __init__(self) -> None:
        self.files: Dict[str, bytes] = {p.name: p.read_bytes() for p in SAMPLES.iterdir() if p.is_file()}
        self.hits: Dict[str, int] = {}
        self.drops: Dict[str, int] = {}
        self.release = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                url = urlparse(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                parts = url.path.strip("/").split("/")
                server.hits[url.path] = server.hits.get(url.path, 0) + 1
                try:
                    if parts[0] == "files" and len(parts) == 2 and parts[1] in server.files and "ranges" in query:
                        self.send_ranges(server.files[parts[1]], query)
                    elif parts[0] == "files" and len(parts) == 2 and parts[1] in server.files:
                        validators = caching_headers(server.files[parts[1]], query)
                        etag = validators.get("ETag")
                        modified = validators.get("Last-Modified")
                        if (etag and self.headers.get("If-None-Match") == etag) or (
                                modified and not self.headers.get("If-None-Match") and self.headers.get("If-Modified-Since") == modified):
                            self.send_response(304)
                            for name, value in validators.items():
                                self.send_header(name, value)
                            self.send_header("Content-Length", "0")
                            self.end_headers()
                            return
                        self.validators = validators
                        self.send_body(server.files[parts[1]], int(query.get("chunk", 0)), int(query.get("delayMs", 0)),
                                       query.get("type") or mimetypes.guess_type(parts[1])[0] or "application/octet-stream")
                    elif parts[0] == "redirect" and len(parts) == 3:
                        n = int(parts[1])
                        self.send_response(302)
                        self.send_header("Location", f"/files/{parts[2]}" if n <= 1 else f"/redirect/{n - 1}/{parts[2]}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                    elif parts[0] == "status" and len(parts) == 2:
                        self.send_plain(int(parts[1]), b"status " + parts[1].encode())
                    elif parts[0] == "hang":
                        server.release.wait(60)
                        self.send_plain(503, b"released")
                    elif parts[0] == "truncate" and len(parts) == 2 and parts[1] in server.files:
                        body = server.files[parts[1]]
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(body)))
                        self.end_headers()
                        self.wfile.write(body[: len(body) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                    elif parts[0] == "text":
                        self.send_plain(200, b"this is not an image")
                    else:
                        self.send_plain(404, b"not found")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def send_ranges(self, body: bytes, query: Dict[str, str]) -> None:
                import hashlib
                import random
                import socket
                mode = query["ranges"]
                etag = '"r' + hashlib.sha1(body).hexdigest()[:16] + '"'
                asked = self.headers.get("Range") or ""
                start = 0
                if mode != "ignore" and asked.startswith("bytes=") and asked.endswith("-") and asked[6:-1].isdigit() \
                        and int(asked[6:-1]) < len(body) and self.headers.get("If-Range", etag) == etag:
                    start = max(0, int(asked[6:-1]) - 1) if mode == "bad" else int(asked[6:-1])
                partial = start > 0 or (mode == "bad" and bool(asked))
                self.send_response(206 if partial else 200)
                self.send_header("Accept-Ranges", "bytes")
                self.send_header("ETag", etag)
                self.send_header("Content-Length", str(len(body) - start))
                if partial:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                server.drops[self.path] = count = server.drops.get(self.path, 0) + 1
                if count <= int(query.get("drops", 0)) and len(body) - start > 1:
                    cut = start + 1 + random.Random(int(query.get("seed", 1)) * 1_000_003 + count).randrange(len(body) - start - 1)
                    self.wfile.write(body[start:cut])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.wfile.write(body[start:])

            def send_plain(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def send_body(self, body: bytes, chunk: int, delay_ms: int, mime: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", mime)
                for name, value in getattr(self, "validators", {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if chunk <= 0:
                    self.wfile.write(body)
                    return
                for start in range(0, len(body), chunk):
                    self.wfile.write(body[start:start + chunk])
                    self.wfile.flush()
                    time.sleep(delay_ms / 1000)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="loopback server", daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def binary_path() -> Optional[str]:
    import os
    explicit = os.environ.get("IMAGE_WORKER_BIN")
    if explicit:
        return explicit
    # Installed from a wheel that carries the worker (scripts/package-check.sh --ray): test that one.
    from image_worker._binary import bundled_binary
    bundled = bundled_binary()
    if bundled is not None:
        return bundled
    for build in ("debug", "release"):
        candidate = REPO / ".build" / build / "image-worker"
        if candidate.exists():
            return str(candidate)
    return None


class ConnectProxy:
    """A forward proxy on loopback: CONNECT tunnels, and plain requests in absolute form passed on
    to their host; it resolves ``images.test`` to 127.0.0.1 itself, so a URL naming it can be
    fetched through the proxy or not at all. With ``credentials`` ("user:pass") it answers 407 to a
    request without them."""

    def __init__(self, credentials: Optional[str] = None) -> None:
        import base64
        import select
        import socket
        import socketserver

        self.tunnels: list = []  # type: ignore[type-arg]
        self.forwarded: list = []  # type: ignore[type-arg]
        expected = "Basic " + base64.b64encode(credentials.encode()).decode() if credentials else None
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = self.request.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                head, _, rest = data.partition(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                auth = next((l.split(":", 1)[1].strip() for l in lines[1:] if l.lower().startswith("proxy-authorization:")), None)
                plain = method != "CONNECT" and target.startswith("http://")
                if (method != "CONNECT" and not plain) or (expected and auth != expected):
                    self.request.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                    return
                if plain:
                    # Passed on as it came (origin servers accept the absolute form), then relayed.
                    url = urlparse(target)
                    host, port = url.hostname or "", str(url.port or 80)
                    proxy.forwarded.append(target)
                else:
                    host, port = target.rsplit(":", 1)
                upstream = socket.create_connection(("127.0.0.1" if host == "images.test" else host, int(port)))
                if plain:
                    upstream.sendall(head + b"\r\n\r\n" + rest)
                else:
                    proxy.tunnels.append(target)
                    self.request.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    if rest:
                        upstream.sendall(rest)
                sockets = [self.request, upstream]
                while True:
                    readable, _, _ = select.select(sockets, [], [], 30)
                    if not readable:
                        break
                    for s in readable:
                        chunk = s.recv(65536)
                        if not chunk:
                            upstream.close()
                            return
                        (upstream if s is self.request else self.request).sendall(chunk)

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="connect proxy", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)
