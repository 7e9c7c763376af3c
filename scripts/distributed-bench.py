#!/usr/bin/env python3
"""Files/s of image_worker.distributed with 1 and 2 Ray actors on this machine (Ray's local
mode), against a loopback server serving the repository's samples/ (each URL distinct, so nothing
is shared): the tests' Python server, or with --base one already serving samples/ (nginx:
STATE=… ../shared/bench/serve.sh start samples, then --base http://127.0.0.1:8081), in
interleaved rounds. Run through scripts/distributed-bench.sh, which makes a venv
with Ray. Prints one line per round and the median per actor count."""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python" / "tests"))

import ray  # noqa: E402
from loopback import LoopbackServer, binary_path  # noqa: E402

from image_worker.distributed import download_distributed, make_actors  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--format", default="original", help="original, or png for a decode, scale and encode")
    parser.add_argument("--binary", default=None)
    parser.add_argument("--base", default=None, help="a server already serving samples/ (else the tests' Python one)")
    args = parser.parse_args()
    binary = args.binary or binary_path()
    server = LoopbackServer()
    names = sorted(n for n in server.files if n.endswith((".jpg", ".png")))
    base = args.base.rstrip("/") if args.base else server.url("/files")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    rates: dict[int, list[float]] = {1: [], 2: []}
    try:
        for round_ in range(args.rounds):
            for actors in (1, 2):
                pool = make_actors(actors, binary)
                ray.get([a.pid.remote() for a in pool])  # started: not timed
                urls = [f"{base}/{names[i % len(names)]}?r={round_}&a={actors}&n={i}" for i in range(args.urls)]
                extra = {"max_pixel_size": 256} if args.format != "original" else {}
                with tempfile.TemporaryDirectory() as out:
                    start = time.monotonic()
                    records = download_distributed(urls, dir=out, actors=pool, shard_size=250, concurrency=8,
                                                   progress=False, format=args.format, **extra)
                    seconds = time.monotonic() - start
                for actor in pool:
                    ray.kill(actor)
                failed = sum(r["outcome"] != "ok" for r in records)
                rate = len(records) / seconds
                rates[actors].append(rate)
                print(f"round {round_ + 1}: {actors} actor(s): {len(records)} URLs in {seconds:.2f} s = {rate:.0f} files/s"
                      f"{f', {failed} failed' if failed else ''}", flush=True)
    finally:
        ray.shutdown()
        server.close()
    one, two = statistics.median(rates[1]), statistics.median(rates[2])
    print(f"median: 1 actor {one:.0f} files/s, 2 actors {two:.0f} files/s ({two / one:.2f}x), format {args.format}, "
          f"server {args.base or 'the tests (Python http.server)'}")


if __name__ == "__main__":
    main()
