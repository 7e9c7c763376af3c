#!/usr/bin/env python3
"""The JPEG thumbnail jobs of the Python side of scripts/pipeline_bench.py, on the same pipeline as
../shared/bench/pipeline_anchor.py (aiohttp downloads, N in flight, decoding in a T-thread pool):
its `pipeline` and its figures, with two jobs of its own.

usage: thumb_jpeg_anchor.py JOB --list URLS.txt [--out DIR] [--conc 6] [--threads 2] [--size 256]

  thumb-jpeg      Pillow: draft() (JPEG DCT scaling) + thumbnail((S, S)) + save(format="JPEG",
                  quality=90) to OUT/<n>.jpg, as the PNG thumbnail job does with PNG
  cover-pillow    Pillow's exact-size thumbnail: draft() (JPEG DCT scaling to at least S x S), then
                  ImageOps.fit((S, S), LANCZOS) (scale to cover, crop the centre), JPEG quality 90
  cover-vips      pyvips (libvips): Image.thumbnail_buffer(body, S, height=S, crop="centre") (shrink
                  on load, then resize and crop), jpegsave_buffer Q=90; libvips' own threads pinned to
                  1 (VIPS_CONCURRENCY), the pool's T threads do the work
  thumb-jpeg-i2d  img2dataset's resize-and-encode (its resizer.py, resize_mode "keep_ratio_largest"):
                  cv2.imdecode, cv2.resize to the longest side S with INTER_AREA, cv2.imencode
                  JPEG at img2dataset's default encode_quality 95, to OUT/<n>.jpg

Prints one JSON line, as pipeline_anchor.py does. Needs aiohttp, Pillow, opencv-python-headless, and
pyvips (with pyvips-binary) for cover-vips.
"""
import argparse
import asyncio
import importlib.util
import io
import json
import os
import resource
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("pipeline_anchor", os.path.join(HERE, "..", "..", "shared", "bench", "pipeline_anchor.py"))
anchor = importlib.util.module_from_spec(spec)
spec.loader.exec_module(anchor)


def pillow_jpeg(b, path, size):
    from PIL import Image
    im = Image.open(io.BytesIO(b))
    im.draft("RGB", (size, size))
    im.thumbnail((size, size))
    if im.mode != "RGB":
        im = im.convert("RGB")
    im.save(path, format="JPEG", quality=90)


def pillow_cover(b, path, size):
    from PIL import Image, ImageOps
    im = Image.open(io.BytesIO(b))
    im.draft("RGB", (size, size))
    if im.mode != "RGB":
        im = im.convert("RGB")
    ImageOps.fit(im, (size, size), Image.LANCZOS).save(path, format="JPEG", quality=90)


def vips_cover(b, path, size):
    import pyvips
    image = pyvips.Image.thumbnail_buffer(b, size, height=size, crop="centre")
    if image.hasalpha():
        image = image.flatten()
    with open(path, "wb") as f:
        f.write(image.jpegsave_buffer(Q=90))


def img2dataset_jpeg(b, path, size):
    import cv2
    import numpy
    img = cv2.imdecode(numpy.frombuffer(b, numpy.uint8), cv2.IMREAD_UNCHANGED)
    if img.ndim == 3 and img.shape[2] == 4:  # as img2dataset: alpha blended away, then BGR
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
    h, w = img.shape[:2]
    if max(h, w) > size:
        scale = size / max(h, w)
        img = cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".jpg", img, [int(cv2.IMWRITE_JPEG_QUALITY), 95])
    if not ok:
        raise ValueError("encoding failed")
    with open(path, "wb") as f:
        f.write(encoded.tobytes())


def work(job, b, out, n, size):
    path = os.path.join(out, f"{n}.jpg")
    {"thumb-jpeg": pillow_jpeg, "thumb-jpeg-i2d": img2dataset_jpeg, "cover-pillow": pillow_cover, "cover-vips": vips_cover}[job](
        b, path, size)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("job", choices=["thumb-jpeg", "thumb-jpeg-i2d", "cover-pillow", "cover-vips"])
    ap.add_argument("--list", required=True)
    ap.add_argument("--out", default="/dev/shm/pipeline-anchor")
    ap.add_argument("--conc", type=int, default=6)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--size", type=int, default=256)
    a = ap.parse_args()
    if a.job == "cover-vips":
        os.environ["VIPS_CONCURRENCY"] = "1"  # (read when libvips starts: before the import)
        import pyvips
        pyvips.cache_set_max(0)
    anchor.work = work  # the pipeline calls the module's `work` for each body
    urls = [line.strip() for line in open(a.list) if line.strip()]
    os.makedirs(a.out, exist_ok=True)
    t0, c0 = time.perf_counter(), anchor.cpu_s()
    stats = asyncio.run(anchor.pipeline(a.job, urls, a.out, a.conc, a.threads, a.size))
    n, wall, cpu = len(urls), time.perf_counter() - t0, anchor.cpu_s() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(dict(job=a.job, files=n, **stats, wall_s=round(wall, 3), files_s=round(n / wall, 1),
                          cpu_s=round(cpu, 3), peak_rss_mb=round(rss, 1))))


if __name__ == "__main__":
    main()
