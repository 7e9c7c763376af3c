#!/usr/bin/env python3
"""The paths users take, as they would write them, for scripts/pipeline_bench.py to time.

usage: user_paths.py JOB --list URLS.txt [--out DIR] [--binary PATH]

  py-dir       image_worker.download_many(urls, dir=OUT, progress=False)   (the Python client, files)
  py-numpy     image_worker.iter_downloads(urls, format="rgba") → to_numpy() (the Python client, pixels)
  aiohttp-numpy the aiohttp + Pillow script of ../shared/bench/pipeline_anchor.py, each image decoded
               to RGBA and made a numpy array (numpy.asarray): what a user writes instead of py-numpy

Prints one JSON line: job, files, ok, failed, wall_s (in this process; the caller also measures the
whole process), peak_rss_mb.
"""
import argparse
import asyncio
import json
import os
import resource
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def py_dir(urls, out, binary):
    import image_worker
    outcomes = image_worker.download_many(urls, dir=out, progress=False, binary=binary)
    return sum(1 for o in outcomes if o.ok)


def py_numpy(urls, binary):
    import image_worker
    ok = 0
    for outcome in image_worker.iter_downloads(urls, format="rgba", binary=binary):
        if outcome.ok and outcome.image is not None:
            array = outcome.image.to_numpy()
            ok += array.size > 0
    return ok


def aiohttp_numpy(urls):
    import io
    from concurrent.futures import ThreadPoolExecutor

    import aiohttp
    import numpy
    from PIL import Image

    def to_array(body):
        im = Image.open(io.BytesIO(body))
        im.load()
        return numpy.asarray(im if im.mode == "RGBA" else im.convert("RGBA"))

    async def run():
        ok = 0
        pool = ThreadPoolExecutor(2)
        loop = asyncio.get_running_loop()
        queue = list(enumerate(urls))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=6)) as session:
            async def one_worker():
                nonlocal ok
                while queue:
                    _, url = queue.pop(0)
                    try:
                        async with session.get(url) as response:
                            body = await response.read()
                        array = await loop.run_in_executor(pool, to_array, body)
                        ok += array.size > 0
                    except Exception as e:  # one bad file fails alone, as in the worker
                        print(f"aiohttp-numpy: {url}: {e}", file=sys.stderr)
            await asyncio.gather(*(one_worker() for _ in range(6)))
        pool.shutdown()
        return ok

    return asyncio.run(run())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("job", choices=["py-dir", "py-numpy", "aiohttp-numpy"])
    ap.add_argument("--list", required=True)
    ap.add_argument("--out")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "image-worker"))
    a = ap.parse_args()
    with open(a.list) as f:
        urls = [line.strip() for line in f if line.strip()]
    start = time.perf_counter()
    if a.job == "py-dir":
        ok = py_dir(urls, a.out, a.binary)
    elif a.job == "py-numpy":
        ok = py_numpy(urls, a.binary)
    else:
        ok = aiohttp_numpy(urls)
    wall = time.perf_counter() - start
    print(json.dumps(dict(job=a.job, files=len(urls), ok=ok, failed=len(urls) - ok, wall_s=wall, peak_rss_mb=peak_rss_mb())))


if __name__ == "__main__":
    main()
