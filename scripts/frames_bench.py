#!/usr/bin/env python3
"""Every frame of an animated GIF to numpy: the worker through the Python client
(`download(url, format="rgba", frames="all").result().to_numpy()`) beside what a user would write
instead (the bytes fetched with urllib, then Pillow's `ImageSequence`, each frame `convert("RGBA")`,
stacked with numpy), each side a whole Python process over loopback HTTP, in interleaved rounds.

The GIFs are made here, reproducibly, from the benchmark corpus: GIFS animations of 100 frames of
480 x 270, each a slow pan across one of the web set's photos, saved by Pillow (its quantizer, its
frame differences and disposal), like a screen recording or a clip turned into a GIF.

Prints each side's GIFs/s, CPU and peak memory, and the ratio Pillow ÷ worker of wall time
(medians over the rounds): the goal is at least 2.

    scripts/frames_bench.py --corpus .build-bench/corpus --python .build-bench/venv/bin/python
        [--binary .build-dist/release/image-worker] [--rounds 6] [--gifs 4]
"""

import argparse
import functools
import http.server
import os
import statistics
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_bench import run_measured  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MAKE = r"""
import sys
from PIL import Image
source, out = sys.argv[1], sys.argv[2]
photo = Image.open(source).convert("RGB")
scale = max(640 / photo.width, 360 / photo.height)
photo = photo.resize((max(640, round(photo.width * scale)), max(360, round(photo.height * scale))), Image.Resampling.LANCZOS)
frames = []
for i in range(100):
    x = (photo.width - 480) * i // 99
    y = (photo.height - 270) * (99 - i) // 99
    frames.append(photo.crop((x, y, x + 480, y + 270)))
frames[0].save(out, save_all=True, append_images=frames[1:], duration=40, loop=0)
"""

WORKER = r"""
import sys
sys.path.insert(0, sys.argv[1])
import image_worker
total = 0
with image_worker.Worker(sys.argv[2]) as worker:
    handles = [worker.download(url, format="rgba", frames="all") for url in sys.argv[3:]]
    for handle in handles:
        array = handle.result().to_numpy()
        assert array.shape == (100, 270, 480, 4), array.shape
        total += int(array[:, 0, 0, 0].sum())
print(total)
"""

PILLOW = r"""
import sys, urllib.request, io
import numpy
from PIL import Image, ImageSequence
total = 0
for url in sys.argv[1:]:
    data = urllib.request.urlopen(url).read()
    image = Image.open(io.BytesIO(data))
    array = numpy.stack([numpy.asarray(frame.convert("RGBA")) for frame in ImageSequence.Iterator(image)])
    assert array.shape == (100, 270, 480, 4), array.shape
    total += int(array[:, 0, 0, 0].sum())
print(total)
"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--python", default=sys.executable, help="a Python with Pillow and numpy")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build-dist", "release", "image-worker"))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--gifs", type=int, default=4)
    args = parser.parse_args()
    photos = sorted(os.path.join(args.corpus, "web", n) for n in os.listdir(os.path.join(args.corpus, "web")) if n.endswith(".jpg"))
    with tempfile.TemporaryDirectory() as folder:
        for n in range(args.gifs):
            run_measured([args.python, "-c", MAKE, photos[n * len(photos) // args.gifs], os.path.join(folder, f"{n}.gif")], warm=False)
        sizes = [os.path.getsize(os.path.join(folder, f"{n}.gif")) for n in range(args.gifs)]
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=folder))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        urls = [f"http://127.0.0.1:{server.server_port}/{n}.gif" for n in range(args.gifs)]
        print(f"{args.gifs} GIFs of 100 frames of 480x270 ({sum(sizes) // args.gifs // 1024} KiB each); {args.rounds} rounds")
        sides = {
            "worker": [args.python, "-c", WORKER, os.path.join(ROOT, "clients", "python", "src"), args.binary, *urls],
            "pillow": [args.python, "-c", PILLOW, *urls],
        }
        results = {name: [] for name in sides}
        outputs = {}
        for round_ in range(args.rounds):
            for name in (list(sides) if round_ % 2 == 0 else list(reversed(sides))):
                wall, cpu, rss, out = run_measured(sides[name], stdout=__import__("subprocess").PIPE)
                results[name].append((wall, cpu, rss))
                outputs.setdefault(name, out)
        server.shutdown()
    if outputs["worker"] != outputs["pillow"]:
        print(f"note: the first pixels differ (worker {outputs['worker'].strip()}, Pillow {outputs['pillow'].strip()})")
    for name, runs in results.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = max(r[2] for r in runs)
        print(f"{name:7} {args.gifs / wall:6.2f} GIFs/s  wall {wall:6.3f} s  CPU {cpu:6.3f} s  peak RSS {rss:6.0f} MB")
    ratios = [p[0] / w[0] for w, p in zip(results["worker"], results["pillow"])]
    cpu_ratios = [p[1] / w[1] for w, p in zip(results["worker"], results["pillow"])]
    print(f"Pillow / worker: wall {statistics.median(ratios):.2f} x (rounds {min(ratios):.2f}-{max(ratios):.2f}), "
          f"CPU {statistics.median(cpu_ratios):.2f} x (goal: wall >= 2)")


if __name__ == "__main__":
    main()
