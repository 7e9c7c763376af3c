#!/usr/bin/env python3
"""Memory flat in the number of rows (issue 62's goal): a table of --rows URLs that a server
answers 404 fast, through the Python client's `download_dataset(..., output_format="webdataset")`,
once with a tenth of the rows and once with all of them, each in a Python process of its own.
Prints each run's rows/s, the Python client's peak RSS and the worker's (the child it waited
for), and the goals: under 150 MB for the worker and 300 MB for the client at every size.

    scripts/dataset_memory.py [--rows 1000000] [--base http://127.0.0.1:8081]

The server is nginx from ../shared/bench/serve.sh (scripts/pipeline-bench.sh starts it; any server
that answers /missing/N.jpg with a 404 will do). The worker is $IMAGE_WORKER_BIN, or what the
client finds.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, resource, sys, time
from image_worker import download_dataset
table, out = sys.argv[1], sys.argv[2]
start = time.perf_counter()
result = download_dataset(table, out, caption_col="caption", output_format="webdataset", shard_size=10_000, max_retries=0)
wall = time.perf_counter() - start
print(json.dumps(dict(rows=result.count, failed=result.failed, shards=len(result.shards), wall_s=wall,
                      client_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      worker_mb=resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--base", default="http://127.0.0.1:8081")
    a = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="dataset-memory-")
    worst = {}
    for rows in (a.rows // 10, a.rows):
        table = os.path.join(scratch, f"rows-{rows}.csv")
        with open(table, "w") as f:
            f.write("url,caption\n")
            for n in range(rows):
                f.write(f"{a.base}/missing/{n}.jpg,caption {n}\n")
        out = os.path.join(scratch, f"out-{rows}")
        run = subprocess.run([sys.executable, "-c", CHILD, table, out], capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(run.stderr[-3000:])
        r = json.loads(run.stdout.strip().splitlines()[-1])
        assert r["rows"] == rows and r["failed"] == rows, r
        print(f"{rows:9,} rows: {rows / r['wall_s']:8.0f} rows/s, {r['shards']} shards; peak RSS: worker "
              f"{r['worker_mb']:6.1f} MB, Python client {r['client_mb']:6.1f} MB", flush=True)
        worst["worker"] = max(worst.get("worker", 0), r["worker_mb"])
        worst["client"] = max(worst.get("client", 0), r["client_mb"])
        subprocess.run(["rm", "-rf", out, table])
    os.rmdir(scratch)
    print(f"goal: worker under 150 MB ({'met' if worst['worker'] < 150 else 'NOT met'}: {worst['worker']:.1f}), "
          f"Python client under 300 MB ({'met' if worst['client'] < 300 else 'NOT met'}: {worst['client']:.1f})")


if __name__ == "__main__":
    main()
