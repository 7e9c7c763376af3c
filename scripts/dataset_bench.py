#!/usr/bin/env python3
"""A training set's shards, side by side: `image-worker get` against img2dataset (issue 62's goal).

    scripts/pipeline-bench.sh --dataset [--rounds 4]     (sets up what it needs, then runs this)
    scripts/dataset_bench.py --corpus DIR --base URL --worker BIN --img2dataset CMD [--rounds 4]

The corpus's web set (1,000 files served by nginx on loopback) as a CSV of URLs and captions,
turned into WebDataset shards of 256 x 256 center crops (JPEG, quality 95, img2dataset's default)
with their captions and metadata, by

    worker    image-worker get -i rows.csv --caption-col caption --output-format webdataset
              --width 256 --height 256 --fit cover --format jpeg --quality 95 (its defaults
              otherwise: concurrency, opt-outs honoured)
    i2d-1x6   img2dataset, 1 process x 6 threads, --resize_mode center_crop --output_format
              webdataset (its defaults otherwise: sha256, EXIF, opt-outs)
    i2d-2x6   the same with 2 processes (shards of --shard-size rows, so that both have work)

taking turns in every round (the order rotates). Wall time, CPU and peak RSS are each whole
process's (wait4: img2dataset's worker processes included), from start to exit; images/s counts
the samples in the shards written. It prints the medians and the median of each round's ratios:
the worker's images/s over each img2dataset's (goal: >= 5) and its CPU over theirs (goal: <= 0.3).
"""
import argparse
import csv
import glob
import json
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time


def measured(argv):
    """Runs argv to its end; (wall s, CPU s, peak RSS MB, exit status)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    errors = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{argv[0]} exited {code}: {errors.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code


def samples(out):
    """The images in the shards written (`.jpg` members of every `.tar`)."""
    n = 0
    for shard in glob.glob(os.path.join(out, "*.tar")):
        with tarfile.open(shard) as tar:
            n += sum(1 for name in tar.getnames() if name.endswith(".jpg"))
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--base", required=True, help="where the corpus is served, e.g. http://127.0.0.1:8081")
    ap.add_argument("--worker", required=True, help="the image-worker binary")
    ap.add_argument("--img2dataset", required=True, help="the img2dataset command")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--shard-size", type=int, default=250)
    a = ap.parse_args()

    with open(os.path.join(a.corpus, "web_urls.txt")) as f:
        urls = [a.base.rstrip("/") + "/" + line.strip().lstrip("/") for line in f if line.strip()]
    scratch = tempfile.mkdtemp(prefix="dataset-bench-")
    rows = os.path.join(scratch, "rows.csv")
    with open(rows, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["url", "caption"])
        for n, url in enumerate(urls):
            writer.writerow([url, f"photo {n}, from the web set"])
    out = os.path.join(scratch, "out")
    size = str(a.shard_size)

    def i2d(processes):
        return [a.img2dataset, "--url_list", rows, "--input_format", "csv", "--url_col", "url", "--caption_col", "caption",
                "--output_format", "webdataset", "--output_folder", out, "--processes_count", str(processes),
                "--thread_count", "6", "--image_size", "256", "--resize_mode", "center_crop", "--encode_quality", "95",
                "--number_sample_per_shard", size, "--enable_wandb", "False", "--retries", "0"]

    sides = {
        "worker": [a.worker, "get", "-i", rows, "--caption-col", "caption", "--output-format", "webdataset", "--shard-size", size,
                   "-o", out, "--width", "256", "--height", "256", "--fit", "cover", "--format", "jpeg", "--quality", "95",
                   "--no-progress"],
        "i2d-1x6": i2d(1),
        "i2d-2x6": i2d(2),
    }
    names = list(sides)
    results = {name: [] for name in names}
    try:
        for r in range(a.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for name in order:
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                wall, cpu, rss, _ = measured(sides[name])
                n = samples(out)
                results[name].append(dict(wall=wall, cpu=cpu, rss=rss, samples=n, rate=n / wall))
                print(f"round {r + 1} {name:8} {n:5} samples {wall:6.2f} s {n / wall:7.1f} images/s "
                      f"CPU {cpu:6.2f} s peak RSS {rss:6.1f} MB", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"\n{len(urls)} URLs, shards of {a.shard_size}, 256 x 256 center crops, medians of {a.rounds} rounds:")
    print(f"{'side':9} {'images/s':>9} {'CPU s':>7} {'CPU s/1k':>9} {'peak MB':>8} {'samples':>8}")
    for name in names:
        rs = results[name]
        med = lambda k: statistics.median(x[k] for x in rs)  # noqa: E731
        print(f"{name:9} {med('rate'):9.1f} {med('cpu'):7.2f} {1000 * med('cpu') / max(1, med('samples')):9.2f} "
              f"{med('rss'):8.1f} {med('samples'):8.0f}")
    for other in names[1:]:
        speed = statistics.median(w["rate"] / o["rate"] for w, o in zip(results["worker"], results[other]))
        cpu = statistics.median((w["cpu"] / max(1, w["samples"])) / (o["cpu"] / max(1, o["samples"]))
                                for w, o in zip(results["worker"], results[other]))
        print(f"worker / {other}: {speed:.2f} x the images/s (goal >= 5), {cpu:.2f} x the CPU per image (goal <= 0.3)")
    print(json.dumps({name: results[name] for name in names}))


if __name__ == "__main__":
    main()
