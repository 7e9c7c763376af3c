#!/usr/bin/env python3
"""Fault and soak suite: the worker against a server that misbehaves at random, for a bounded time.

    scripts/soak.py                      two minutes (what CI runs)
    scripts/soak.py --seconds 3600       an hour
    IMAGE_WORKER=.build/release/image-worker scripts/soak.py --seconds 600 --seed 7

A loopback HTTP server answers each request as its URL asks: a real image (samples/ and
../shared/corpora), chunked or trickled, or a stall, a reset, a truncated body, 5xx/429/404,
redirects (to another answer, in a loop, to a port out of range), garbage, a JPEG or PNG whose
header claims billions of pixels or a chunk of 2 GiB, a body over the size limit; a resumable
body cut part-way whose `Range` retry is answered wrongly (a 206 with bytes beyond its
Content-Range, another start, another total or validator, a 200, or rightly), and a 206 to a
request that asked no range. Half the workers share a `--cache-dir` that a vandal thread keeps
planting links (to a folder of decoys outside it), FIFOs, garbage and sparse giants into. A driver sends
mixed downloads (every delivery and format, scaled, progressive), cancels, priority changes,
configure changes and status requests, pauses reading stdout (a slow reader), and ends each worker
by EOF, `shutdown`/`exit`, SIGTERM or SIGINT before starting the next.

Checked, and printed at the end: every token ends with exactly one terminal event and nothing of it
follows; every worker exits 0 (1 for an `exit` without `shutdown`); peak RSS (VmHWM) stays under
--max-rss-mb; open descriptors do not grow from one idle point to the next; nothing is written
outside the output directory, and no temporary file is left in it; every original file a token
wrote equals the image it asked for, byte for byte (no body mixed from two answers, no cut one
taken whole); the decoys outside the cache are untouched. Exit status 0 when all held.
Standard library only; network traffic stays on 127.0.0.1.
"""
import argparse
import http.server
import json
import os
import random
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# MARK: test bodies

def load_images():
    images = {}
    for folder in [os.path.join(ROOT, "samples"), os.path.join(ROOT, "..", "shared", "corpora"), os.path.join(ROOT, "Tests", "Corpora")]:
        for dirpath, _, files in os.walk(folder):
            for name in files:
                if name.lower().endswith((".jpg", ".jpeg", ".png", ".webp", ".gif", ".avif")):
                    with open(os.path.join(dirpath, name), "rb") as f:
                        data = f.read()
                    if len(data) <= 4 << 20:
                        images[f"{len(images)}-{name}"] = data
    return images


def png_chunk(kind, data, length=None):
    return struct.pack(">I", len(data) if length is None else length) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bombs(images):
    jpeg = next(v for k, v in sorted(images.items()) if k.endswith("testorig.jpg"))
    b = bytearray(jpeg)
    i = 2
    while i + 9 < len(b):
        marker, length = b[i + 1], b[i + 2] << 8 | b[i + 3]
        if 0xC0 <= marker <= 0xC2:
            b[i + 5:i + 9] = struct.pack(">HH", 65500, 65500)
            break
        i += 2 + length
    png = next(v for k, v in sorted(images.items()) if k.endswith("basn2c08.png"))
    text = png[:33] + png_chunk(b"zTXt", b"Comment\0\0" + b"x" * 40, 0x7FFFFFFF) + png[33:]
    return {"bomb-jpeg": bytes(b), "bomb-png": text}


# MARK: the misbehaving server

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "soak"

    def log_message(self, *args):
        pass

    def do_GET(self):
        path, _, query = self.path.partition("?")
        params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
        mode = params.get("mode", "ok")
        body = self.server.bodies.get(path.rsplit("/", 1)[-1], b"")
        rng = random.Random(params.get("r", "0"))
        try:
            getattr(self, "mode_" + mode.replace("-", "_"))(body, params, rng)
        except (BrokenPipeError, ConnectionResetError, socket.timeout, OSError):
            pass

    def head(self, status, length=None, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", "image/jpeg")
        if length is not None:
            self.send_header("Content-Length", str(length))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()

    def mode_ok(self, body, params, rng):
        # Storable: the shared cache keeps it (the driver asks some URLs again).
        self.head(200, len(body), [("Cache-Control", "max-age=600"), ("ETag", '"%08x"' % zlib.crc32(body))])
        self.wfile.write(body)

    def mode_chunked(self, body, params, rng):
        self.head(200, extra=[("Transfer-Encoding", "chunked")])
        for i in range(0, len(body), 4096):
            part = body[i:i + 4096]
            self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
        self.wfile.write(b"0\r\n\r\n")

    def mode_slow(self, body, params, rng):
        self.head(200, len(body))
        step = max(1, len(body) // 20)
        for i in range(0, len(body), step):
            self.wfile.write(body[i:i + step])
            self.wfile.flush()
            time.sleep(rng.uniform(0.005, 0.08))

    def mode_stall(self, body, params, rng):
        self.head(200, len(body))
        self.wfile.write(body[:len(body) // 3])
        self.wfile.flush()
        time.sleep(8)

    def mode_reset(self, body, params, rng):
        self.head(200, len(body))
        self.wfile.write(body[:rng.randrange(max(1, len(body)))])
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        self.connection.close()

    def mode_truncated(self, body, params, rng):
        self.head(200, len(body) + 1000)
        self.wfile.write(body)
        self.close_connection = True

    def mode_status(self, body, params, rng):
        code = int(params.get("code", "500"))
        extra = [("Retry-After", "0")] if code in (429, 503) else []
        self.head(code, 2, extra)
        self.wfile.write(b"no")

    def mode_redirect(self, body, params, rng):
        target = params.get("to", "ok")
        name = self.path.split("?")[0]
        if target == "loop":
            location = f"{name}?mode=redirect&to=loop&r={params.get('r', '0')}"
        elif target == "badport":
            location = "http://127.0.0.1:70000/x.jpg"
        else:
            location = f"{name}?mode={target}&r={params.get('r', '0')}"
        self.head(302, 0, [("Location", location)])

    def mode_rawstatus(self, body, params, rng):
        # Any status from 0 to 999, as three digits, whatever HTTP allows (000, 099 and 001
        # once stopped the worker inside its HTTP client), with a body announced, chunked, empty
        # or running to the close.
        code = rng.randrange(0, 1000)
        kind = rng.choice(["length", "chunked", "empty", "close"])
        line = b"HTTP/1.1 %03d Odd\r\nContent-Type: image/jpeg\r\n" % code
        if kind == "length":
            self.wfile.write(line + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        elif kind == "chunked":
            self.wfile.write(line + b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        elif kind == "empty":
            self.wfile.write(line + b"Content-Length: 0\r\n\r\n")
        else:
            self.wfile.write(line + b"\r\n" + body)
            self.close_connection = True
        self.wfile.flush()

    def mode_kaclose(self, body, params, rng):
        # A whole answer, kept alive by every header it sends, then the connection closed (short
        # keep-alive timeouts, proxies): the client's next request on it finds it gone.
        self.head(200, len(body))
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def mode_garbage(self, body, params, rng):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 5000)))
        self.head(200, len(data))
        self.wfile.write(data)

    def mode_resume(self, body, params, rng):
        # Resumable (strong ETag, Accept-Ranges): the first answer is cut; the Range retry is
        # answered as `how` says.
        how = params.get("how", "good")
        asked = self.headers.get("Range")
        tag = '"v1"'
        if not asked or not asked.startswith("bytes="):
            self.head(200, len(body), [("Accept-Ranges", "bytes"), ("ETag", tag)])
            self.wfile.write(body[:max(1, len(body) // 2)])
            self.wfile.flush()
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
            return
        start = int(asked[6:].split("-")[0] or "0")
        rest, total = body[start:], len(body)
        if how == "full200":
            self.head(200, len(body), [("ETag", tag)])
            self.wfile.write(body)
            return
        first, sent = start, rest
        if how == "extra":
            sent = rest + b"\0" * 37
        elif how == "wrongstart":
            first = max(0, start - 10)
        elif how == "total":
            total += 100
        elif how == "othertag":
            tag = '"v2"'
        self.head(206, len(sent), [("Content-Range", f"bytes {first}-{first + len(rest) - 1}/{total}"), ("ETag", tag)])
        self.wfile.write(sent)

    def mode_partial206(self, body, params, rng):
        # A 206 whatever was asked: the first bytes, with a Content-Range that says so.
        n = max(1, len(body) // 3)
        self.head(206, n, [("Content-Range", f"bytes 0-{n - 1}/{len(body)}")])
        self.wfile.write(body[:n])

    def mode_huge(self, body, params, rng):
        self.head(200, 10**12)
        self.wfile.write(b"\xff\xd8\xff" + b"\0" * 1000)
        self.close_connection = True


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address):
        pass  # a client that went away mid-answer is part of the game


# MARK: one worker

class Worker:
    def __init__(self, binary, cwd, args):
        self.proc = subprocess.Popen(
            [binary] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
        self.lock = threading.Lock()
        self.events = {}        # token -> list of methods
        self.completed = {}     # token -> its download/completed params
        self.outcomes = {}      # outcome or error name -> count
        self.problems = []
        self.responses = {}
        self.reading = threading.Event()
        self.reading.set()
        self.peak_rss_mb = 0
        self.stderr_tail = []
        threading.Thread(target=self.read_stdout, daemon=True).start()
        threading.Thread(target=self.read_stderr, daemon=True).start()

    def read_stdout(self):
        for line in self.proc.stdout:
            self.reading.wait()
            try:
                message = json.loads(line)
            except ValueError:
                self.problems.append(f"unparsable output line: {line[:200]!r}")
                continue
            with self.lock:
                if "id" in message:
                    self.responses[json.dumps(message["id"])] = message
                    continue
                params = message.get("params") or {}
                token = params.get("token")
                seen = self.events.setdefault(json.dumps(token), [])
                if seen and seen[-1] == "download/completed":
                    self.problems.append(f"token {token}: {message['method']} after its terminal event")
                seen.append(message["method"])
                if message["method"] == "download/completed":
                    error = (params.get("error") or {}).get("data", {}).get("name")
                    key = error or params.get("outcome")
                    self.outcomes[key] = self.outcomes.get(key, 0) + 1
                    self.completed[token] = params

    def read_stderr(self):
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [line.decode(errors="replace")])[-30:]

    def send(self, message):
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def sample(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.peak_rss_mb = max(self.peak_rss_mb, int(line.split()[1]) // 1024)
            return len(os.listdir(f"/proc/{self.proc.pid}/fd"))
        except (FileNotFoundError, ProcessLookupError):
            return None

    def live_tokens(self, tokens):
        with self.lock:
            return [t for t in tokens if (self.events.get(json.dumps(t)) or [None])[-1] != "download/completed"]


# MARK: the vandal of a shared cache folder

def vandalise(cache, decoys, rng, stop):
    # What anyone who can write a shared cache folder could plant, while workers use it: links to
    # a folder outside (whose files eviction must never delete), FIFOs where entries are (never to
    # be waited on), garbage and cut entries, a sparse giant that makes the cache look full, and
    # `tmp` itself replaced by a link.
    entries = os.path.join(cache, "v1", "entries")
    while not stop.is_set():
        try:
            shards = [os.path.join(entries, d) for d in os.listdir(entries)] if os.path.isdir(entries) else []
            shard = rng.choice(shards) if shards else os.path.join(entries, "%02x" % rng.randrange(256))
            os.makedirs(shard, exist_ok=True)
            files = [f for f in os.listdir(shard) if not f.startswith(".")]
            what = rng.choice(["link-dir", "link-file", "fifo", "garbage", "cut", "sparse", "tmp-link"])
            target = os.path.join(shard, rng.choice(files) if files and what in ("fifo", "garbage", "cut") else "x%06d" % rng.randrange(10**6))
            if what in ("fifo", "garbage", "cut") and os.path.lexists(target):
                if what == "cut":
                    with open(target, "r+b") as f:
                        f.truncate(max(0, os.path.getsize(target) // 2))
                    continue
                os.unlink(target)
            if what == "link-dir":
                os.symlink(decoys, target)
            elif what == "link-file":
                os.symlink(os.path.join(decoys, "keep-0"), target)
            elif what == "fifo":
                os.mkfifo(target)
            elif what == "garbage":
                with open(target, "wb") as f:
                    f.write(bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 3000))))
            elif what == "sparse":
                with open(target, "wb") as f:
                    f.truncate(rng.choice([64 << 20, 4 << 30]))
            elif what == "tmp-link":
                # In turn: `tmp` moved away and a link put there, then the link taken away again.
                tmp = os.path.join(cache, "v1", "tmp")
                if os.path.islink(tmp):
                    os.unlink(tmp)
                    os.makedirs(tmp, exist_ok=True)
                else:
                    if os.path.isdir(tmp):
                        os.rename(tmp, tmp + ".moved-%d" % rng.randrange(10**6))
                    os.symlink(decoys, tmp)
        except OSError:
            pass
        stop.wait(rng.uniform(0.05, 0.4))


# MARK: the driver

def run(args):
    rng = random.Random(args.seed)
    images = load_images()
    bodies = dict(images)
    bodies.update(bombs(images))
    names = sorted(images)
    server = Server(("127.0.0.1", 0), Handler)
    server.bodies = bodies
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    binary = os.path.abspath(args.binary or os.environ.get("IMAGE_WORKER") or os.path.join(ROOT, ".build", "debug", "image-worker"))
    sandbox = tempfile.mkdtemp(prefix="image-worker-soak-")
    out = os.path.join(sandbox, "out")
    os.makedirs(out)
    deadline = time.monotonic() + args.seconds
    totals = {"workers": 0, "tokens": 0, "peak_rss_mb": 0, "problems": [], "outcomes": {}}
    modes = [("ok", 30), ("chunked", 8), ("slow", 6), ("stall", 3), ("reset", 5), ("truncated", 4),
             ("status-500", 3), ("status-503", 3), ("status-429", 2), ("status-404", 3), ("redirect-ok", 4),
             ("redirect-loop", 2), ("redirect-badport", 2), ("garbage", 4), ("huge", 2), ("bomb-jpeg", 2), ("bomb-png", 2),
             ("resume-good", 2), ("resume-extra", 2), ("resume-wrongstart", 2), ("resume-total", 2), ("resume-othertag", 2),
             ("resume-full200", 2), ("partial206", 2), ("rawstatus", 4), ("kaclose", 6)]
    population = [m for m, w in modes for _ in range(w)]
    serial = 0
    fd_idle = []
    # The shared cache folder, its vandal, and the decoys outside it that must survive.
    cache = os.path.join(sandbox, "cache")
    decoys = tempfile.mkdtemp(prefix="image-worker-soak-decoys-")
    for i in range(8):
        with open(os.path.join(decoys, f"keep-{i}"), "wb") as f:
            f.write(b"decoy %d\n" % i)
        os.utime(os.path.join(decoys, f"keep-{i}"), (0, 0))  # old: what a tmp cleanup would take
    stop_vandal = threading.Event()
    threading.Thread(target=vandalise, args=(cache, decoys, random.Random(args.seed + 1), stop_vandal), daemon=True).start()

    while time.monotonic() < deadline:
        totals["workers"] += 1
        cached = rng.random() < 0.5
        worker = Worker(binary, sandbox, ["--max-concurrent-downloads", str(rng.choice([2, 4, 6])), "--timeout-ms", "2000"]
                        + (["--cache-dir", cache] if cached else []))
        worker.send({"jsonrpc": "2.0", "id": "cfg", "method": "configure",
                     "params": {"maxRetries": 1, "retryBaseDelayMs": 50, "maxBodyBytes": 8 << 20,
                                "cacheMaxBytes": rng.choice([1 << 20, 32 << 20])}})
        tokens = []
        expected_files = {}  # token -> the image its original file must equal
        epoch_end = min(deadline, time.monotonic() + rng.uniform(10, 30))
        while time.monotonic() < epoch_end:
            serial += 1
            roll = rng.random()
            if roll < 0.70:
                token = f"t{serial}"
                tokens.append(token)
                mode = rng.choice(population)
                name = "bomb-jpeg" if mode == "bomb-jpeg" else "bomb-png" if mode == "bomb-png" else rng.choice(names[:12] if mode == "ok" else names)
                # Plain answers of a few URLs come again (hits in the shared cache).
                query = f"r={serial % 4 if mode == 'ok' else serial}"
                if mode.startswith("resume-"):
                    query += f"&mode=resume&how={mode[7:]}"
                elif mode.startswith("status-"):
                    query += f"&mode=status&code={mode[7:]}"
                elif mode.startswith("redirect-"):
                    query += f"&mode=redirect&to={mode[9:]}"
                elif not mode.startswith("bomb"):
                    query += f"&mode={mode}"
                fmt = rng.choice(["original", "original", "png", "jpeg", "webp", "rgba", "rgb", "gray"])
                output = {"format": fmt}
                delivery = rng.choice(["none", "inline", "file", "file"])
                output["delivery"] = delivery
                if delivery == "file":
                    if rng.random() < 0.5:
                        output["dir"] = out
                    else:
                        output["path"] = os.path.join(out, f"{token}.bin")
                if fmt != "original" and rng.random() < 0.5:
                    output["maxPixelSize"] = rng.choice([1, 16, 64, 256])
                params = {"url": f"{base}/img/{name}?{query}", "token": token, "output": output,
                          "priority": rng.choice(["veryLow", "low", "normal", "high", "veryHigh"])}
                if fmt != "original" and rng.random() < 0.4:
                    params["progressive"] = True
                    output["partialIntervalMs"] = rng.choice([0, 50, 200])
                if rng.random() < 0.3:
                    params["retryFailed"] = True
                if fmt == "original" and output.get("path") and not mode.startswith(("bomb", "garbage", "huge", "rawstatus")):
                    expected_files[token] = bodies[name]
                if mode.startswith("resume-") or mode == "partial206":
                    params["maxRetries"] = 2
                    params["retryDelayMs"] = 10
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "download", "params": params})
            elif roll < 0.80 and tokens:
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "cancel", "params": {"token": rng.choice(tokens)}})
            elif roll < 0.87 and tokens:
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "setPriority",
                             "params": {"token": rng.choice(tokens), "priority": rng.choice(["low", "high"])}})
            elif roll < 0.92:
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "configure", "params": rng.choice([
                    {"maxConcurrentDownloads": rng.choice([1, 2, 6, 12])}, {"suspended": True}, {"suspended": False},
                    {"executionOrder": rng.choice(["fifo", "lifo"])}, {"timeoutMs": rng.choice([500, 2000])},
                    {"clearFailedURLs": True}])})
            elif roll < 0.95:
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "status"})
            elif roll < 0.97:
                # A slow reader: stop reading stdout for a while.
                worker.reading.clear()
                time.sleep(rng.uniform(0.5, 3))
                worker.reading.set()
            elif roll < 0.98:
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "cancelAll"})
            else:
                # An idle point: let everything end, then count descriptors.
                worker.send({"jsonrpc": "2.0", "id": serial, "method": "configure", "params": {"suspended": False}})
                worker.send({"jsonrpc": "2.0", "id": f"all{serial}", "method": "cancelAll"})
                wait_until = time.monotonic() + 15
                while worker.live_tokens(tokens) and time.monotonic() < wait_until:
                    time.sleep(0.05)
                time.sleep(0.3)
                count = worker.sample()
                if count is not None:
                    fd_idle.append(count)
            worker.sample()
            time.sleep(rng.uniform(0, 0.02))

        # End this worker one of the ways a client does.
        ending = rng.choice(["eof", "eof-cancel", "shutdown", "exit", "sigterm", "sigint"])
        expected = 1 if ending == "exit" else 0
        worker.reading.set()
        if ending == "eof-cancel":
            worker.send({"jsonrpc": "2.0", "id": "ca", "method": "cancelAll"})
        if ending in ("eof", "eof-cancel"):
            worker.send({"jsonrpc": "2.0", "id": "unsuspend", "method": "configure", "params": {"suspended": False}})
            worker.proc.stdin.close()
        elif ending == "shutdown":
            worker.send({"jsonrpc": "2.0", "id": "sd", "method": "shutdown", "params": {"cancelPending": rng.random() < 0.5}})
            worker.send({"jsonrpc": "2.0", "method": "exit"})
        elif ending == "exit":
            worker.send({"jsonrpc": "2.0", "method": "exit"})
        else:
            worker.proc.send_signal(signal.SIGTERM if ending == "sigterm" else signal.SIGINT)
        try:
            code = worker.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            code = "hung"
            worker.problems.append(f"worker did not exit within 60 s after {ending}")
        time.sleep(0.2)  # the reader threads drain the pipes
        if code != expected and code != "hung":
            worker.problems.append(f"worker exited {code} after {ending} (expected {expected})")
        for token in tokens:
            seen = worker.events.get(json.dumps(token), [])
            terminals = seen.count("download/completed")
            if terminals != 1:
                worker.problems.append(f"token {token}: {terminals} terminal events ({seen[-5:]})")
        # An original file written by a token that succeeded is the image it asked for, whole.
        for token, image in expected_files.items():
            done = worker.completed.get(token) or {}
            if done.get("outcome") != "success" or done.get("skipped"):
                continue
            try:
                with open(done.get("path", ""), "rb") as f:
                    written = f.read()
            except OSError:
                continue  # replaced since by a later token of the same path
            if written != image:
                worker.problems.append(f"token {token}: wrote {len(written)} bytes where the image has {len(image)}")
        totals["tokens"] += len(tokens)
        totals["from_cache"] = totals.get("from_cache", 0) + sum(
            1 for p in worker.completed.values() if (p.get("metrics") or {}).get("fromCache"))
        for key, count in worker.outcomes.items():
            totals["outcomes"][key] = totals["outcomes"].get(key, 0) + count
        totals["peak_rss_mb"] = max(totals["peak_rss_mb"], worker.peak_rss_mb)
        if worker.peak_rss_mb > args.max_rss_mb:
            worker.problems.append(f"peak RSS {worker.peak_rss_mb} MB over {args.max_rss_mb} MB")
        if worker.problems:
            worker.problems.append("worker stderr (last lines):\n" + "".join(worker.stderr_tail))
        totals["problems"] += worker.problems
        print(f"soak: worker {totals['workers']}{' (shared cache)' if cached else ''}: {len(tokens)} tokens, ended by {ending} -> {code}, "
              f"peak {worker.peak_rss_mb} MB, problems {len(worker.problems)}", file=sys.stderr, flush=True)

    server.shutdown()
    stop_vandal.set()
    time.sleep(0.5)
    for i in range(8):
        if not os.path.isfile(os.path.join(decoys, f"keep-{i}")):
            totals["problems"].append(f"a decoy outside the cache folder was deleted: keep-{i}")
    # Nothing outside the output directory (and the cache), no temporary file left in it.
    for dirpath, dirs, files in os.walk(sandbox):
        if dirpath == cache or dirpath.startswith(cache + os.sep):
            continue
        for name in files:
            path = os.path.join(dirpath, name)
            if not path.startswith(out + os.sep):
                totals["problems"].append(f"written outside the output directory: {path}")
            elif name.startswith(".image-worker-"):
                totals["problems"].append(f"temporary file left behind: {path}")
    if len(fd_idle) >= 2 and fd_idle[-1] > fd_idle[0] + 32:
        totals["problems"].append(f"open descriptors grew at idle points: {fd_idle}")
    print(f"soak: {args.seconds} s, seed {args.seed}: {totals['workers']} workers, {totals['tokens']} tokens, "
          f"peak RSS {totals['peak_rss_mb']} MB, descriptors at idle points {fd_idle[:3]}…{fd_idle[-3:]}", flush=True)
    print(f"soak: {totals.get('from_cache', 0)} answered from the shared cache", flush=True)
    print("soak: outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(totals["outcomes"].items(), key=lambda kv: -kv[1])), flush=True)
    for problem in totals["problems"][:50]:
        print("soak: PROBLEM: " + problem, flush=True)
    # The closing line CI reads: tokens checked, problems found.
    print(f"soak: {totals['tokens']} passed, {len(totals['problems'])} failed", flush=True)
    return 1 if totals["problems"] else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=120, help="how long to run (default 120, at most 3600)")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000, help="random seed (printed)")
    parser.add_argument("--binary", help="the image-worker binary (default $IMAGE_WORKER or .build/debug)")
    parser.add_argument("--max-rss-mb", type=int, default=1024, help="peak RSS allowed for one worker (default 1024)")
    args = parser.parse_args()
    if args.seconds > 3600:
        parser.error("--seconds: an hour at most (run it again for more, with another --seed)")
    print(f"soak: seed {args.seed}", file=sys.stderr, flush=True)
    sys.exit(run(args))


if __name__ == "__main__":
    main()
