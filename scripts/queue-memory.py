#!/usr/bin/env python3
"""What a queued download costs the worker: for each N, a fresh worker is suspended, sent N
`download` requests (file output, quiet) and asked a cheap question once they are all read; the
growth of its resident memory (VmRSS) over the idle worker's, per download, is printed, and the
anonymous part of each (RssAnon: the rest is the binary's own pages, clean and shared). Figures
move with where the worker's hash tables are in their doubling, so several N are measured.

    scripts/queue-memory.py [--binary .build/release/image-worker] [N ...]
"""
import argparse
import json
import subprocess
import time


def rss_kib(pid):
    """Resident memory, and the part of it that is the process's own (anonymous: not pages of
    the binary and its libraries, which are clean and shared with the page cache)."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            fields[name] = value.split()[0] if value.split() else "0"
    return int(fields["VmRSS"]), int(fields["RssAnon"])


def measure(binary, n):
    worker = subprocess.Popen([binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(message):
        worker.stdin.write((json.dumps(message) + "\n").encode())

    def answer(request_id):
        worker.stdin.flush()
        while True:
            line = worker.stdout.readline()
            if not line:
                raise RuntimeError("the worker ended")
            if line.startswith(b"{") and json.loads(line).get("id") == request_id:
                return

    send({"jsonrpc": "2.0", "id": 1, "method": "configure", "params": {"suspended": True, "maxLiveDownloads": 10_000_000}})
    answer(1)
    time.sleep(0.3)
    idle = rss_kib(worker.pid)
    output = {"delivery": "file", "dir": "/tmp/image-worker-queue-memory"}
    for i in range(n):
        url = f"http://127.0.0.1:9/images/photo-{i:07d}.jpg"  # never fetched: the queue stays suspended
        send({"jsonrpc": "2.0", "method": "download", "params": {"token": f"t{i}", "url": url, "quiet": True, "output": output}})
    # A question that touches no token: answered once every download before it was read.
    send({"jsonrpc": "2.0", "id": 2, "method": "cancel", "params": {"token": "none-such"}})
    answer(2)
    time.sleep(0.5)
    queued = rss_kib(worker.pid)
    worker.kill()
    worker.wait()
    return idle, queued


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", default=".build/release/image-worker")
    parser.add_argument("counts", nargs="*", type=int, default=[10_000, 20_000, 50_000, 100_000, 200_000])
    args = parser.parse_args()
    print(f"{'queued':>8}  {'idle RSS (anon)':>16}  {'queued RSS (anon)':>18}  {'growth (anon)':>16}  {'per download (anon)':>20}")
    for n in args.counts:
        (idle, idle_anon), (queued, queued_anon) = measure(args.binary, n)
        growth, growth_anon = queued - idle, queued_anon - idle_anon
        print(
            f"{n:>8}  {idle / 1024:>6.1f} ({idle_anon / 1024:>5.1f}) MB  {queued / 1024:>7.1f} ({queued_anon / 1024:>5.1f}) MB"
            f"  {growth / 1024:>6.1f} ({growth_anon / 1024:>5.1f}) MB  {growth * 1024 / n:>8.0f} ({growth_anon * 1024 / n:>5.0f}) B")


if __name__ == "__main__":
    main()
