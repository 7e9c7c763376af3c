#!/usr/bin/env python3
"""The whole pipeline, side by side: image-worker against the Python script a user would write.

    scripts/pipeline-bench.sh                 (sets up what it needs, then runs this)
    scripts/pipeline_bench.py --corpus DIR --base URL [--rounds 4] [--jobs decode,thumb-png]

Over the corpus's web set (1,000 files served by nginx on loopback, listed in web_urls.txt), at 6
downloads in flight on this machine, each job is run by the release worker (fed every download at
once on stdin, ended by EOF) and by ../shared/bench/pipeline_anchor.py (aiohttp + Pillow, 2 decode
threads), taking turns in every round (the order alternates), plus the from-memory decode ceiling
(TurboJPEG + Pillow, every file already in memory), `curl --parallel --parallel-max 6`, `aria2c -j 6`
(when installed) and, with --img2dataset, img2dataset (1 process, 6 threads: originals, and its
default 256-pixel JPEG thumbnails beside thumb-jpeg-i2d), all writing files:

    decode          decode to RGBA, delivered nowhere (`delivery: none`)
    rgba-files      decode to RGBA, written as raw files
    thumb-png       256-pixel thumbnails as PNG files
    thumb-jpeg      256-pixel thumbnails as JPEG files at quality 90 (Python: Pillow's save(format="JPEG", quality=90))
    thumb-jpeg-i2d  the same at quality 95 against img2dataset's resize-and-encode (OpenCV INTER_AREA,
                    cv2.imencode at its default quality 95; scripts/thumb_jpeg_anchor.py)
    original-files  the bytes as they came, written as files
    decode-file     `decode` without the network: the worker reads the corpus as file:// URLs (from the
                    page cache, `--file-root`); Python's side is the from-memory ceiling itself, so the
                    row shows what the worker's own pipeline costs beyond the decoders, HTTP aside
    get-dir         the shell user's path: `image-worker get -i urls.txt -o DIR` (originals into a folder;
                    Python: original-files; also against curl)
    py-dir          the Python client's folder path: `download_many(urls, dir=DIR)` (scripts/user_paths.py;
                    Python: original-files)
    node-dir        the Node client's folder path: `for await (… of downloadMany(urls, {dir}))`
                    (scripts/user_paths.mjs; Python: original-files)
    py-numpy        URLs to numpy arrays through the Python client: `iter_downloads(urls, format="rgba")`
                    then `to_numpy()`; Python: aiohttp + Pillow decoding to RGBA, then `numpy.asarray`
    plumbing        originals delivered nowhere (`delivery: none`): the worker's per-file cost without
                    decoding or writing, in files/s per busy core (files/s ÷ CPU s per wall s) beside
                    curl's (Python: original-files)
    decode-warm     `decode` with the HTTP cache (`--cache-dir`), filled by one unmeasured run before
                    the rounds: what a re-run of the same job costs (Python: its `decode` again);
                    the row says how many came from the cache and how many were revalidated (nginx
                    sends ETag and Last-Modified only, so freshness is the heuristic one)

It prints, per job, the medians over rounds of files/s, CPU seconds per 1,000 files and peak RSS
for each side, and the median of each round's worker/Python ratio (files/s and CPU), then the
ceiling and curl rows, and each job's files/s against the worker's own `decode` job in the same
rounds (issue 12's "within 15% of" and "faster than" goals). Wall time and CPU are the whole
process's (the worker's from wait4), from start to exit. Before each run of a job that writes
files, as many bytes as it writes are written and deleted where it writes them (see `prefault`).
With --phases (scripts/anchors/jpeg_phases.c, built by pipeline-bench.sh) it ends with where one
thread's JPEG decoding time goes on the same files: Huffman decoding alone, and decoding at a
256-pixel thumbnail's DCT scale. An even number of rounds gives each side the first turn as often.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ANCHOR = os.path.join(ROOT, "..", "shared", "bench", "pipeline_anchor.py")
JOBS = ["decode", "rgba-files", "thumb-png", "thumb-jpeg", "thumb-jpeg-i2d", "thumb-cover", "original-files", "get-dir", "py-dir", "node-dir",
        "py-numpy", "plumbing", "decode-warm", "decode-file"]
# The jobs that run a user's path (a command or a client) rather than the protocol fed directly.
USER_JOBS = ("get-dir", "py-dir", "node-dir", "py-numpy")
USER_PATHS = os.path.join(ROOT, "scripts", "user_paths.py")
USER_PATHS_NODE = os.path.join(ROOT, "scripts", "user_paths.mjs")
# The JPEG thumbnail jobs' Python side: this repository's, on pipeline_anchor.py's pipeline.
JPEG_ANCHOR = os.path.join(ROOT, "scripts", "thumb_jpeg_anchor.py")


def worker_output(job, out, n):
    if job == "plumbing":
        return {"delivery": "none"}
    if job in ("decode", "decode-warm", "decode-file"):
        return {"format": "rgba", "delivery": "none"}
    if job == "rgba-files":
        return {"format": "rgba", "delivery": "file", "path": os.path.join(out, f"{n}.rgba")}
    if job == "thumb-png":
        return {"format": "png", "maxPixelSize": 256, "delivery": "file", "path": os.path.join(out, f"{n}.png")}
    if job == "thumb-cover":
        return {"format": "jpeg", "quality": 90, "width": 256, "height": 256, "delivery": "file", "path": os.path.join(out, f"{n}.jpg")}
    if job in ("thumb-jpeg", "thumb-jpeg-i2d"):
        return {"format": "jpeg", "quality": 90 if job == "thumb-jpeg" else 95, "maxPixelSize": 256, "delivery": "file",
                "path": os.path.join(out, f"{n}.jpg")}
    return {"delivery": "file", "path": os.path.join(out, str(n))}


WARM_BYTES = 256 << 20


def warm_memory(size=WARM_BYTES):
    """Touches `size` bytes of fresh memory here and frees them, so that the pages the next run
    takes are backed by this VM's host whatever ran before it. This host takes back memory a guest
    frees, and a process's first touch of such a page costs several microseconds more: the same
    worker's plumbing job took 0.242 CPU s right after another process had freed 400 MB, 0.230
    after the previous run, 0.205 with this first (16 rounds). Every measured run, of every tool,
    gets it; 256 MB covers the largest (the aiohttp script's numpy job, ~210 MB)."""
    memory = bytearray(size)
    memory[::4096] = b"\x01" * len(range(0, size, 4096))  # one write a page
    del memory
    # A child's peak RSS (wait4) starts from this process's at the fork: reset ours to what it is now.
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def run_measured(argv, stdin_bytes=None, stdout=subprocess.DEVNULL, warm=True):
    """Runs argv to its end (after `warm_memory`, unless the caller did); returns (wall s, CPU s,
    peak RSS MB, stdout bytes or None)."""
    if warm:
        warm_memory()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                            stdout=stdout, stderr=subprocess.DEVNULL)
    if stdin_bytes is not None:
        def feed():
            proc.stdin.write(stdin_bytes)
            proc.stdin.close()
        threading.Thread(target=feed, daemon=True).start()
    output = proc.stdout.read() if stdout == subprocess.PIPE else None
    # wait4 rather than Popen.wait: it also gives the child's CPU time and peak RSS.
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output


def run_worker(binary, job, urls, out, cache_dir=None, file_root=None, cpus=None, warm=True):
    lines = [json.dumps({"jsonrpc": "2.0", "id": 0, "method": "configure", "params": {"maxConcurrentDownloads": 6}})]
    for n, url in enumerate(urls):
        lines.append(json.dumps({"jsonrpc": "2.0", "method": "download",
                                 "params": {"token": n, "url": url, "output": worker_output(job, out, n)}}))
    argv = [binary] + (["--cache-dir", cache_dir] if cache_dir else []) + (["--file-root", file_root] if file_root else [])
    if cpus:
        argv = ["taskset", "-c", cpus] + argv
    wall, cpu, rss, output = run_measured(argv, ("\n".join(lines) + "\n").encode(), stdout=subprocess.PIPE, warm=warm)
    done = [line for line in output.splitlines() if b'"download/completed"' in line and b'"outcome":"success"' in line]
    return dict(files=len(urls), ok=len(done), wall_s=wall, cpu_s=cpu, peak_rss_mb=rss,
                from_cache=sum(1 for line in done if b'"fromCache":true' in line),
                revalidated=sum(1 for line in done if b'"revalidated":true' in line))


def run_user_path(python, binary, job, urls, url_list, out):
    """A user's path to its end: the command or client script as a user runs it (the worker it
    starts is a child of it, so the CPU and peak RSS measured include the worker's)."""
    if job == "get-dir":
        # As a user types it: one "ok URL -> path" line per file on stdout (a pipe here).
        argv = [binary, "get", "-i", url_list, "-o", out]
        wall, cpu, rss, output = run_measured(argv, stdout=subprocess.PIPE)
        ok = sum(1 for line in output.splitlines() if line.startswith(b"ok"))
        return dict(files=len(urls), ok=ok, wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)
    if job == "node-dir":
        argv = ["node", USER_PATHS_NODE, job, "--list", url_list, "--out", out, "--binary", binary]
    else:
        argv = [python, USER_PATHS, job, "--list", url_list, "--out", out, "--binary", binary]
    wall, cpu, rss, output = run_measured(argv, stdout=subprocess.PIPE)
    reported = json.loads(output.decode().strip().splitlines()[-1])
    return dict(files=reported["files"], ok=reported["ok"], wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)


def run_python(python, job, url_list, out):
    if job == "py-numpy":
        wall, cpu, rss, output = run_measured([python, USER_PATHS, "aiohttp-numpy", "--list", url_list], stdout=subprocess.PIPE)
        reported = json.loads(output.decode().strip().splitlines()[-1])
        return dict(files=reported["files"], ok=reported["ok"], wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)
    if job in ("get-dir", "py-dir", "node-dir", "plumbing"):
        job = "original-files"
    script = JPEG_ANCHOR if job.startswith("thumb-jpeg") or job in ("thumb-cover", "cover-vips") else ANCHOR
    job = {"decode-warm": "decode", "thumb-cover": "cover-pillow"}.get(job, job)
    wall, cpu, rss, output = run_measured(
        [python, script, job, "--list", url_list, "--out", out, "--conc", "6", "--threads", "2"], stdout=subprocess.PIPE)
    reported = json.loads(output.decode().strip().splitlines()[-1])
    return dict(files=reported["files"], ok=reported["ok"], wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)


def run_ceiling(python, corpus, threads=2, cpus=None):
    argv = [python, ANCHOR, "ceiling", "--corpus", corpus, "--threads", str(threads)]
    if cpus:
        argv = ["taskset", "-c", cpus] + argv
    _, _, _, output = run_measured(argv, stdout=subprocess.PIPE)
    reported = json.loads(output.decode().strip().splitlines()[-1])
    return dict(files=reported["files"], ok=reported["ok"], wall_s=reported["wall_s"], cpu_s=reported["cpu_s"],
                peak_rss_mb=reported["peak_rss_mb"])


def server_pids():
    """nginx's master and worker processes, from the pid file serve.sh keeps under $STATE (empty
    when the benchmark was not started by pipeline-bench.sh)."""
    try:
        with open(os.path.join(os.environ["STATE"], "nginx.pid")) as f:
            master = int(f.read().strip())
        with open(f"/proc/{master}/task/{master}/children") as f:
            return [master] + [int(pid) for pid in f.read().split()]
    except (KeyError, OSError, ValueError):
        return []


def cpu_seconds(pids):
    """User and system CPU seconds the processes have used so far."""
    ticks = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def idle_seconds(cpus):
    """Seconds the cores `cpus` (a taskset list, "0,1") have stood idle so far, by /proc/stat."""
    wanted = {f"cpu{c}" for c in cpus.split(",")}
    ticks = 0
    with open("/proc/stat") as f:
        for line in f:
            fields = line.split()
            if fields and fields[0] in wanted:
                ticks += int(fields[4]) + int(fields[5])  # idle, iowait
    return ticks / os.sysconf("SC_CLK_TCK")


def run_decode_pinned(binary, urls, out, cpus, server, pin_server):
    """The decode job under taskset; with pin_server, nginx's processes run on the same cores for
    the run (else on any). Adds the server's CPU seconds during the run and the seconds the cores
    stood idle."""
    before_pinning = {pid: os.sched_getaffinity(pid) for pid in server} if pin_server else {}
    for pid in before_pinning:
        os.sched_setaffinity(pid, {int(c) for c in cpus.split(",")})
    try:
        warm_memory()  # before the counts start: its own time is not the run's idle time
        before, idle_before = cpu_seconds(server), idle_seconds(cpus)
        result = run_worker(binary, "decode", urls, out, cpus=cpus, warm=False)
        result["server_cpu_s"] = cpu_seconds(server) - before
        result["idle_s"] = idle_seconds(cpus) - idle_before
    finally:
        for pid, cores in before_pinning.items():
            os.sched_setaffinity(pid, cores)
    return result


def run_curl(urls, out):
    config = os.path.join(out, "curl.cfg")
    with open(config, "w") as f:
        for n, url in enumerate(urls):
            f.write(f'url = "{url}"\noutput = "{os.path.join(out, str(n))}"\n')
    wall, cpu, rss, _ = run_measured(["curl", "--silent", "--fail", "--parallel", "--parallel-max", "6", "--config", config])
    return dict(files=len(urls), ok=len(urls), wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)


def run_aria2(urls, out):
    """aria2c writing the same files, 6 at a time (one connection each, as the other tools)."""
    listing = os.path.join(out, "aria2.txt")
    with open(listing, "w") as f:
        for n, url in enumerate(urls):
            f.write(f"{url}\n  out={n}\n")
    wall, cpu, rss, _ = run_measured(["aria2c", "--input-file", listing, "--dir", out, "--max-concurrent-downloads", "6",
                                      "--split", "1", "--max-connection-per-server", "1", "--quiet",
                                      "--allow-overwrite", "true", "--auto-file-renaming", "false",
                                      "--file-allocation", "none", "--max-tries", "1"])
    return dict(files=len(urls), ok=len(urls), wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)


def run_img2dataset(command, url_list, files, out, thumbnails):
    """img2dataset as its README runs it on one machine (1 process, 6 threads, files output):
    originals (no resize, no re-encoding), or its default 256-pixel JPEG thumbnails."""
    shape = (["--image_size", "256", "--resize_mode", "border", "--encode_quality", "95"] if thumbnails
             else ["--resize_mode", "no", "--disable_all_reencoding", "True"])
    wall, cpu, rss, _ = run_measured([command, "--url_list", url_list, "--output_folder", out, "--processes_count", "1",
                                      "--thread_count", "6", "--output_format", "files", "--input_format", "txt",
                                      "--extract_exif", "False", "--compute_hash", "None", "--enable_wandb", "False",
                                      "--retries", "0", *shape],
                                     stdout=subprocess.DEVNULL)
    written = sum(1 for _, _, names in os.walk(out) for name in names if name.endswith((".jpg", ".png", ".webp")))
    return dict(files=files, ok=written, wall_s=wall, cpu_s=cpu, peak_rss_mb=rss)


def fresh(directory):
    shutil.rmtree(directory, ignore_errors=True)
    os.makedirs(directory)
    return directory


FILE_JOBS = ("rgba-files", "thumb-png", "thumb-jpeg", "thumb-jpeg-i2d", "thumb-cover", "original-files", "get-dir", "py-dir", "node-dir")


def bytes_in(directory):
    return sum(entry.stat().st_size for entry in os.scandir(directory) if entry.is_file())


def prefault(directory, size):
    """Writes `size` bytes into `directory` and deletes them: the memory a job's files will take is
    then the guest's own, whichever side runs. (On a VM whose host takes back the memory a guest
    frees, the side that wrote after a pause paid for fresh host pages: the same worker's `rgba`
    files ran at 314 and 611 files/s in one run, depending on which side went first.)"""
    chunk = bytes(8 << 20)
    path = os.path.join(directory, ".prefault")
    with open(path, "wb") as f:
        for _ in range(0, size, len(chunk)):
            f.write(chunk)
    os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="make_corpus.py's output (with web/ and web_urls.txt)")
    ap.add_argument("--base", default="http://127.0.0.1:8081", help="where nginx serves the corpus")
    ap.add_argument("--binary", default=os.path.join(ROOT, ".build-dist", "release", "image-worker"))
    ap.add_argument("--python", default=sys.executable, help="a Python with aiohttp, Pillow and PyTurboJPEG")
    ap.add_argument("--baseline", help="another image-worker binary (an earlier commit's) run as a third side of every "
                    "job, taking turns with the others: the A/B ratio, this worker ÷ that one")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--jobs", default=",".join(JOBS))
    ap.add_argument("--phases", help="a built scripts/anchors/jpeg_phases.c")
    ap.add_argument("--img2dataset", help="an img2dataset command: also run it (originals, and its 256-pixel thumbnails)")
    ap.add_argument("--scaling", action="store_true",
                    help="also run the decode job and the from-memory ceiling (1 thread, 2 threads) under taskset on "
                         "1 core and on 2, each 1-core run next to its 2-core run (the order alternates), and print "
                         "both speed-ups; the decode job runs with nginx on any core and with nginx pinned to the "
                         "same cores")
    ap.add_argument("--scaling-rounds", type=int, default=8,
                    help="rounds of --scaling (default 8: a round takes ~12 s, and on a shared machine one "
                         "round's ratio is far from the median now and then)")
    a = ap.parse_args()
    with open(os.path.join(a.corpus, "web_urls.txt")) as f:
        paths = [line.strip() for line in f if line.strip()]
    # web_urls.txt holds paths relative to the corpus root, which --base serves.
    urls = [a.base.rstrip("/") + "/" + p.lstrip("/") for p in paths]
    corpus = os.path.abspath(a.corpus)
    file_urls = ["file://" + os.path.join(corpus, p.lstrip("/")) for p in paths]
    scratch = tempfile.mkdtemp(prefix="pipeline-bench-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    url_list = os.path.join(scratch, "urls.txt")
    with open(url_list, "w") as f:
        f.write("\n".join(urls) + "\n")
    jobs = [j for j in a.jobs.split(",") if j]
    results = {job: {"worker": [], "python": [], "baseline": []} for job in jobs}
    ceiling, curl = [], []
    others = {"aria2c": [], "img2dataset": [], "img2dataset-thumbnails": [], "pyvips-cover": []}
    # The cover thumbnails' second anchor: libvips, the fastest resizer there is (pyvips from PyPI).
    has_pyvips = "thumb-cover" in jobs and subprocess.run([a.python, "-c", "import pyvips"], capture_output=True).returncode == 0
    if "thumb-cover" in jobs and not has_pyvips:
        print("pipeline: no pyvips in the benchmark's Python: thumb-cover runs without its libvips anchor", file=sys.stderr)
    has_aria2 = shutil.which("aria2c") is not None
    print(f"pipeline: {len(urls)} files from {a.base}, {a.rounds} rounds, worker {a.binary}", file=sys.stderr)
    cache_dir = os.path.join(scratch, "http-cache")
    if "decode-warm" in jobs:
        filled = run_worker(a.binary, "decode-warm", urls, fresh(os.path.join(scratch, "out")), cache_dir)
        print(f"pipeline: cache filled ({filled['ok']} files, {filled['from_cache']} already cached)", file=sys.stderr)
    # What each file-writing job writes, from one unmeasured run, to prefault before every run.
    written = {}
    for job in jobs:
        if job in FILE_JOBS:
            out = fresh(os.path.join(scratch, "out"))
            run_worker(a.binary, "original-files" if job in USER_JOBS else job, urls, out)
            written[job] = bytes_in(out)
    sides = ["worker", "python"] + (["baseline"] if a.baseline else [])
    for r in range(a.rounds):
        for job in jobs:
            # Each side first in turn, and (with a baseline) the two workers in both orders.
            order = sides[r % len(sides):] + sides[:r % len(sides)]
            if r // len(sides) % 2 == 1:
                order.reverse()
            for side in order:
                out = fresh(os.path.join(scratch, "out"))
                if job in written:
                    prefault(out, written[job])
                binary = a.baseline if side == "baseline" else a.binary
                runs_worker = side != "python"
                cache = cache_dir if job == "decode-warm" and runs_worker else None
                if job in USER_JOBS and runs_worker:
                    result = run_user_path(a.python, binary, job, urls, url_list, out)
                elif job == "decode-file":
                    result = run_worker(binary, job, file_urls, out, file_root=corpus) if runs_worker else run_ceiling(a.python, a.corpus)
                else:
                    result = run_worker(binary, job, urls, out, cache) if runs_worker else run_python(a.python, job, url_list, out)
                if result["ok"] != len(urls):
                    print(f"pipeline: {side} {job}: only {result['ok']} of {len(urls)} succeeded", file=sys.stderr)
                results[job][side].append(result)
                cached = f" ({result['from_cache']} from the cache, {result['revalidated']} revalidated)" if cache else ""
                print(f"pipeline: round {r + 1} {job:14} {side:8} {len(urls) / result['wall_s']:8.1f} files/s "
                      f"{result['cpu_s']:6.2f} CPU s {result['peak_rss_mb']:7.1f} MB{cached}", file=sys.stderr)
        ceiling.append(run_ceiling(a.python, a.corpus))
        curl.append(run_curl(urls, fresh(os.path.join(scratch, "out"))))
        if has_aria2:
            others["aria2c"].append(run_aria2(urls, fresh(os.path.join(scratch, "out"))))
        if has_pyvips:
            others["pyvips-cover"].append(run_python(a.python, "cover-vips", url_list, fresh(os.path.join(scratch, "out"))))
        if a.img2dataset:
            for thumbnails, name in ((False, "img2dataset"), (True, "img2dataset-thumbnails")):
                result = run_img2dataset(a.img2dataset, url_list, len(urls), fresh(os.path.join(scratch, "out")), thumbnails)
                if result["ok"] != len(urls):
                    print(f"pipeline: {name}: only {result['ok']} of {len(urls)} written", file=sys.stderr)
                others[name].append(result)
    scaling = {"0": [], "0,1": []}
    # The from-memory ceiling on the same cores (1 thread on 1 core, 2 on 2): how far this machine's
    # own decoding scales, with no server and no pipeline.
    ceiling_scaling = {"0": [], "0,1": []}
    # The same decode runs with nginx pinned to the worker's cores: on one core the server's work
    # then shares that core, as on two, instead of running free beside it; the worker's own
    # speed-up, the server's work counted on both sides.
    scaling_pinned = {"0": [], "0,1": []}
    server, pinnable = [], False
    if a.scaling:
        server = server_pids()
        try:
            for pid in server:
                os.sched_setaffinity(pid, os.sched_getaffinity(pid))
            pinnable = bool(server)
        except OSError as error:  # another user's nginx, without CAP_SYS_NICE
            print(f"pipeline: nginx stays on any core: {error}", file=sys.stderr)
        # Each 1-core run next to the 2-core run it is compared with, so that both meet the same
        # moment of a shared machine (its speed drifts from one minute to the next).
        for r in range(a.scaling_rounds):
            order = ["0", "0,1"] if r % 2 == 0 else ["0,1", "0"]
            for pin in ([False, True] if r % 2 == 0 else [True, False]) if pinnable else [False]:
                for cpus in order:
                    result = run_decode_pinned(a.binary, urls, fresh(os.path.join(scratch, "out")), cpus, server, pin)
                    (scaling_pinned if pin else scaling)[cpus].append(result)
                    print(f"pipeline: round {r + 1} decode on cpus {cpus:4} {len(urls) / result['wall_s']:8.1f} files/s "
                          f"{result['cpu_s']:6.2f} CPU s, nginx {result['server_cpu_s']:.2f} CPU s "
                          f"{'on the same cores' if pin else 'on any core'}", file=sys.stderr)
            for cpus in order:
                result = run_ceiling(a.python, a.corpus, threads=cpus.count(",") + 1, cpus=cpus)
                ceiling_scaling[cpus].append(result)
                print(f"pipeline: round {r + 1} ceiling on cpus {cpus:4} {result['files'] / result['wall_s']:8.1f} files/s "
                      f"{result['cpu_s']:6.2f} CPU s", file=sys.stderr)
    shutil.rmtree(scratch, ignore_errors=True)

    def med(values):
        return statistics.median(values)

    def ratios(xs, ys):
        """Each round's files/s ratio."""
        return [(x["files"] / x["wall_s"]) / (y["files"] / y["wall_s"]) for x, y in zip(xs, ys)]

    def speed_ratio(xs, ys):
        """The median of each round's files/s ratio."""
        return med(ratios(xs, ys))

    print("| job | worker files/s | Python files/s | worker ÷ Python files/s | worker ÷ Python CPU "
          "| worker CPU s / 1,000 files | Python CPU s / 1,000 files | worker peak RSS MB | Python peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|")
    for job in jobs:
        w, p = results[job]["worker"], results[job]["python"]
        speed = speed_ratio(w, p)
        cpu = med([x["cpu_s"] / y["cpu_s"] for x, y in zip(w, p)])
        print(f"| {job} | {med([len(urls) / x['wall_s'] for x in w]):.0f} | {med([len(urls) / y['wall_s'] for y in p]):.0f} "
              f"| {speed:.2f} | {cpu:.2f} | {med([x['cpu_s'] for x in w]) * 1000 / len(urls):.2f} "
              f"| {med([y['cpu_s'] for y in p]) * 1000 / len(urls):.2f} | {med([x['peak_rss_mb'] for x in w]):.0f} "
              f"| {med([y['peak_rss_mb'] for y in p]):.0f} |")
    if a.baseline:
        print(f"\nA/B against {a.baseline} (the same jobs, in turn with this worker in every round):")
        print("| job | this worker files/s | baseline files/s | this ÷ baseline files/s (rounds) | this ÷ baseline CPU |")
        print("|---|---|---|---|---|")
        for job in jobs:
            w, b = results[job]["worker"], results[job]["baseline"]
            rounds = ratios(w, b)
            print(f"| {job} | {med([len(urls) / x['wall_s'] for x in w]):.0f} | {med([len(urls) / x['wall_s'] for x in b]):.0f} "
                  f"| {med(rounds):.2f} ({', '.join(f'{x:.2f}' for x in rounds)}) "
                  f"| {med([x['cpu_s'] / y['cpu_s'] for x, y in zip(w, b)]):.2f} |")
    c = med([x["files"] / x["wall_s"] for x in ceiling])
    print(f"\nfrom-memory ceiling (TurboJPEG + Pillow, 2 threads): {c:.0f} files/s")
    if "decode" in results:
        ratio = speed_ratio(results["decode"]["worker"], ceiling)
        print(f"worker decode ÷ ceiling: {ratio:.2f}")
    if "decode-warm" in results:
        w = results["decode-warm"]["worker"]
        print(f"decode-warm: {med([x['from_cache'] for x in w]):.0f} of {len(urls)} from the cache, "
              f"{med([x['revalidated'] for x in w]):.0f} of them revalidated (median per run)")
        if "decode" in results:
            ratio = speed_ratio(w, results["decode"]["worker"])
            print(f"worker decode-warm ÷ decode (cache off): {ratio:.2f}")
    if "decode-file" in results:
        print("decode-file: the Python columns are the from-memory ceiling's (its wall time excludes reading the files)")
    if "decode" in results:
        for job in jobs:
            if job in ("decode", "decode-warm"):  # (decode-warm has its line above)
                continue
            ratio = speed_ratio(results[job]["worker"], results["decode"]["worker"])
            print(f"worker {job} ÷ worker decode (files/s, median of rounds): {ratio:.2f}")
    k = med([len(urls) / x["wall_s"] for x in curl])
    print(f"curl --parallel 6 (originals to files): {k:.0f} files/s")
    if "plumbing" in results:
        def per_busy_core(runs):
            """Each run's files/s ÷ the cores it kept busy (CPU s ÷ wall s): files per CPU second."""
            return [len(urls) / x["cpu_s"] for x in runs]
        rounds = per_busy_core(results["plumbing"]["worker"])
        per_core = med(rounds)
        curl_per_core = med(per_busy_core(curl))
        print(f"plumbing (originals, delivery none): {per_core:.0f} files/s per busy core "
              f"(rounds: {', '.join(f'{x:.0f}' for x in rounds)}); "
              f"curl writing files: {curl_per_core:.0f} files/s per busy core")
    if a.scaling and scaling["0"]:
        worker_scaling = speed_ratio(scaling["0,1"], scaling["0"])
        machine_scaling = speed_ratio(ceiling_scaling["0,1"], ceiling_scaling["0"])
        print(f"decode on 2 cores ÷ on 1 (taskset, median of rounds): {worker_scaling:.2f}; "
              f"the from-memory ceiling's, 2 threads ÷ 1: {machine_scaling:.2f} "
              f"(rounds: {', '.join(f'{x:.2f}' for x in ratios(scaling['0,1'], scaling['0']))}; "
              f"ceiling {', '.join(f'{x:.2f}' for x in ratios(ceiling_scaling['0,1'], ceiling_scaling['0']))})")
        two, one = scaling["0,1"], scaling["0"]
        busy_two, busy_one = med([x["cpu_s"] / x["wall_s"] for x in two]), med([x["cpu_s"] / x["wall_s"] for x in one])
        print(f"  on 2 cores the worker kept {busy_two:.2f} cores busy, nginx "
              f"{med([x['server_cpu_s'] for x in two]):.2f} CPU s per run (on 1 core: "
              f"{med([x['server_cpu_s'] for x in one]):.2f}, free to run on the other)")
        # The speed-up is the busy cores' ratio times the CPU per file's (1 core ÷ 2): a pipeline that
        # waits leaves its cores idle; a machine whose two cores slow each other lowers the second.
        print(f"  the 2 cores stood idle {med([x['idle_s'] / (2 * x['wall_s']) for x in two]):.1%} of the run "
              f"(1 core: {med([x['idle_s'] / x['wall_s'] for x in one]):.1%}); the speed-up is busy cores "
              f"{busy_two:.2f} ÷ {busy_one:.2f} × CPU per file on 1 core ÷ on 2 "
              f"{med([x['cpu_s'] for x in one]) / med([x['cpu_s'] for x in two]):.2f}")
        if scaling_pinned["0"]:
            print(f"  with nginx on the worker's cores (taskset for both): "
                  f"{speed_ratio(scaling_pinned['0,1'], scaling_pinned['0']):.2f} "
                  f"(rounds: {', '.join(f'{x:.2f}' for x in ratios(scaling_pinned['0,1'], scaling_pinned['0']))})")
    for job in ("original-files", "get-dir"):
        if job in results:
            ratio = speed_ratio(results[job]["worker"], curl)
            print(f"worker {job} ÷ curl: {ratio:.2f}")
    labels = {"aria2c": "aria2c -j 6 (originals to files)",
              "img2dataset": "img2dataset, 1 process, 6 threads (originals to files)",
              "img2dataset-thumbnails": "img2dataset, 1 process, 6 threads (its default: 256-pixel JPEGs, quality 95)",
              "pyvips-cover": "pyvips thumbnail_buffer(256, height=256, crop='centre'), 6 fetches, 2 threads (256 x 256 JPEGs, Q 90)"}
    for name, runs in others.items():
        if not runs:
            continue
        print(f"{labels[name]}: {med([len(urls) / x['wall_s'] for x in runs]):.0f} files/s, "
              f"{med([x['cpu_s'] for x in runs]) * 1000 / len(urls):.2f} CPU s / 1,000 files, "
              f"{med([x['peak_rss_mb'] for x in runs]):.0f} MB peak RSS")
        mine = {"img2dataset-thumbnails": "thumb-jpeg-i2d", "pyvips-cover": "thumb-cover"}.get(name, "get-dir")
        if mine in results:
            print(f"worker {mine} ÷ {name}: {speed_ratio(results[mine]['worker'], runs):.2f}")
    if a.phases:
        print_phases(a.phases, os.path.join(a.corpus, "web"))


def print_phases(binary, directory):
    kinds = [json.loads(line) for line in subprocess.run([binary, directory, "256"], check=True, capture_output=True,
                                                         text=True).stdout.splitlines() if line.strip()]
    total = dict(kind="all", files=sum(k["files"] for k in kinds),
                 **{key: sum(k[key] for k in kinds) for key in ("full_s", "entropy_s", "scaled_s")})
    print("\nJPEG decoding, one thread from memory (scripts/anchors/jpeg_phases.c; CPU s, best of 3):")
    print("| JPEGs | files | full size, RGBA | Huffman decoding only | ÷ full | at a 256-pixel thumbnail's DCT scale, RGB | ÷ full |")
    print("|---|---|---|---|---|---|---|")
    for k in kinds + [total]:
        full = max(k["full_s"], 1e-9)
        print(f"| {k['kind']} | {k['files']} | {k['full_s']:.3f} | {k['entropy_s']:.3f} | {k['entropy_s'] / full:.2f} "
              f"| {k['scaled_s']:.3f} | {k['scaled_s'] / full:.2f} |")


if __name__ == "__main__":
    main()
