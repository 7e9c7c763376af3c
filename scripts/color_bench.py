#!/usr/bin/env python3
"""What colour management costs: the web set's JPEGs with an Adobe RGB (1998) profile embedded
(the profile of Pillow's xmp_test.jpg, Tests/Corpora/color, put into each file's APP2 segment: the
same pixels, the same decode work), served by nginx on loopback, decoded by the worker with
`colorProfile: "srgb"` (the default: converted through the profile) and `"keep"` (the stored
values), in interleaved rounds, each side a whole process:

  decode    the protocol fed directly: `format: rgba`, delivered nowhere (pipeline_bench's decode job)
  get-rgb   `image-worker get -i LIST -o DIR --format rgb` as a user types it
  thumb     `get --width 256 --height 256 --format jpeg` (cover thumbnails: converted after the crop)

Prints each side's files/s and CPU, and the ratio srgb ÷ keep of wall and CPU time (medians over
the rounds): the goal is at most 1.10.

    scripts/color_bench.py --corpus .build-bench/corpus [--binary .build-dist/release/image-worker] [--rounds 6]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_bench import run_measured  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVE = os.path.join(ROOT, "..", "shared", "bench", "serve.sh")
PROFILE_SOURCE = os.path.join(ROOT, "Tests", "Corpora", "color", "xmp_test.jpg")


def jpeg_profile(data):
    """The ICC profile in a JPEG's APP2 segments."""
    at, chunks = 2, {}
    while at + 4 <= len(data) and data[at] == 0xFF:
        marker, length = data[at + 1], data[at + 2] << 8 | data[at + 3]
        if marker in (0xDA, 0xD9):
            break
        if marker == 0xE2 and data[at + 4:at + 16] == b"ICC_PROFILE\0":
            chunks[data[at + 16]] = data[at + 18:at + 2 + length]
        at += 2 + length
    return b"".join(chunks[k] for k in sorted(chunks))


def with_profile(data, profile):
    """`data` (a JPEG) with `profile` in APP2 segments after its SOI (and JFIF segment)."""
    at = 2
    if data[2:4] == b"\xff\xe0":
        at = 4 + (data[4] << 8 | data[5])
    pieces, step = [], 65519
    count = (len(profile) + step - 1) // step
    for i in range(count):
        chunk = profile[i * step:(i + 1) * step]
        length = 2 + 14 + len(chunk)
        pieces.append(b"\xff\xe2" + bytes([length >> 8, length & 0xFF]) + b"ICC_PROFILE\0" + bytes([i + 1, count]) + chunk)
    return data[:at] + b"".join(pieces) + data[at:]


def make_corpus(source, target):
    with open(os.path.join(source, "web_urls.txt")) as f:
        paths = [line.strip() for line in f if line.strip().lower().endswith((".jpg", ".jpeg"))]
    with open(PROFILE_SOURCE, "rb") as f:
        profile = jpeg_profile(f.read())
    for path in paths:
        out = os.path.join(target, path.lstrip("/"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        if not os.path.exists(out):
            with open(os.path.join(source, path.lstrip("/")), "rb") as f:
                data = f.read()
            with open(out, "wb") as f:
                f.write(with_profile(data, profile))
    # (serve.sh waits for this file to be served.)
    with open(os.path.join(target, "web_urls.txt"), "w") as f:
        f.write("\n".join(paths) + "\n")
    return paths


def run(job, handling, binary, urls, url_list, out):
    if job == "decode":
        lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "configure", "params": {"maxConcurrentDownloads": 6}})]
        for n, url in enumerate(urls):
            output = {"format": "rgba", "delivery": "none", "colorProfile": handling}
            lines.append(json.dumps({"jsonrpc": "2.0", "method": "download", "params": {"token": n, "url": url, "output": output}}))
        wall, cpu, _, output = run_measured([binary], ("\n".join(lines) + "\n").encode(), stdout=subprocess.PIPE)
        ok = sum(1 for line in output.splitlines() if b'"download/completed"' in line and b'"outcome":"success"' in line)
    else:
        argv = [binary, "get", "-i", url_list, "-o", out, "--color-profile", handling]
        argv += ["--format", "rgb"] if job == "get-rgb" else ["--width", "256", "--height", "256", "--format", "jpeg"]
        wall, cpu, _, output = run_measured(argv, stdout=subprocess.PIPE)
        ok = sum(1 for line in output.splitlines() if line.startswith(b"ok"))
    return dict(ok=ok, wall=wall, cpu=cpu)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="make_corpus.py's output (web/ and web_urls.txt)")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build-dist", "release", "image-worker"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--jobs", default="decode,get-rgb,thumb")
    ap.add_argument("--port", type=int, default=8091)
    a = ap.parse_args()
    target = os.path.join(os.path.dirname(os.path.abspath(a.corpus)), "color-corpus")
    paths = make_corpus(a.corpus, target)
    state = tempfile.mkdtemp(prefix="color-bench-serve-")
    env = dict(os.environ, STATE=state, NGINX_PORT=str(a.port), PYHTTP_PORT=str(a.port + 1))
    started = subprocess.run([SERVE, "start", target], env=env, stdout=subprocess.DEVNULL)
    if started.returncode != 0:
        subprocess.run([SERVE, "stop"], env=env, stdout=subprocess.DEVNULL)
        raise SystemExit("color: the servers did not start")
    scratch = tempfile.mkdtemp(prefix="color-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    try:
        urls = [f"http://127.0.0.1:{a.port}/{p.lstrip('/')}" for p in paths]
        url_list = os.path.join(scratch, "urls.txt")
        with open(url_list, "w") as f:
            f.write("\n".join(urls) + "\n")
        jobs = [j for j in a.jobs.split(",") if j]
        results = {job: {"srgb": [], "keep": []} for job in jobs}
        print(f"color: {len(urls)} JPEGs with an Adobe RGB profile, {a.rounds} rounds, worker {a.binary}", file=sys.stderr)
        for r in range(a.rounds):
            for job in jobs:
                for handling in (["srgb", "keep"] if r % 2 == 0 else ["keep", "srgb"]):
                    out = os.path.join(scratch, "out")
                    shutil.rmtree(out, ignore_errors=True)
                    os.makedirs(out)
                    result = run(job, handling, a.binary, urls, url_list, out)
                    if result["ok"] != len(urls):
                        print(f"color: {job} {handling}: only {result['ok']} of {len(urls)}", file=sys.stderr)
                    results[job][handling].append(result)
                    print(f"color: round {r + 1} {job:8} {handling:5} {len(urls) / result['wall']:8.1f} files/s "
                          f"{result['cpu']:6.2f} CPU s", file=sys.stderr)
        print(f"{'job':8} {'srgb files/s':>13} {'keep files/s':>13} {'wall srgb/keep':>15} {'CPU srgb/keep':>14}")
        for job in jobs:
            s, k = results[job]["srgb"], results[job]["keep"]
            wall = statistics.median(x["wall"] / y["wall"] for x, y in zip(s, k))
            cpu = statistics.median(x["cpu"] / y["cpu"] for x, y in zip(s, k))
            rate = lambda side: len(urls) / statistics.median(x["wall"] for x in side)  # noqa: E731
            print(f"{job:8} {rate(s):13.1f} {rate(k):13.1f} {wall:15.3f} {cpu:14.3f}")
    finally:
        subprocess.run([SERVE, "stop"], env=env, stdout=subprocess.DEVNULL)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
