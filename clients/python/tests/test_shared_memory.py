"""Pixels through shared memory, as users take them: ``iter_downloads(urls, format="rgba")`` and
``to_numpy()``, nothing left in /dev/shm however either side ends (SIGKILL included)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import pytest

import image_worker
from loopback import LoopbackServer

ROOTS = [r for r in ("/dev/shm", "/tmp") if os.path.isdir(r)]


def folders(pid: int) -> List[str]:
    return [name for root in ROOTS for name in os.listdir(root) if name.startswith(f"image-worker-{pid}-")]


def gone(pid: int, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def test_iter_downloads_hands_over_numpy_arrays_of_the_pixels(binary: str, server: LoopbackServer) -> None:
    numpy = pytest.importorskip("numpy")
    urls = [server.url(f"/files/testimgp.jpg?n={i}") for i in range(6)] + [server.url("/files/basn2c08.png")]
    with image_worker.Worker(binary) as worker:
        reference = worker.download(urls[0], format="rgba", inline=True).result()
        expected = numpy.frombuffer(reference.read_bytes(), dtype=numpy.uint8).reshape(149, 227, 4)
        arrays = {}
        for outcome in worker.iter_downloads(urls, format="rgba"):
            assert outcome.ok and outcome.image is not None, outcome.error
            image = outcome.image
            arrays[outcome.index] = image.to_numpy()
            if image.width == 227:
                assert image.buffer is not None and image.path is None and image.data is None, "shared, not base64"
        for index in range(6):
            assert arrays[index].shape == (149, 227, 4)
            assert numpy.array_equal(arrays[index], expected), "the same pixels as inline base64"
        assert arrays[6].shape == (32, 32, 4), "a small image comes inline"
        arrays[0][0, 0, 0] ^= 0xFF  # writable: copy-on-write, the worker's memory untouched
        arrays[6][0, 0, 0] ^= 0xFF  # an inline one too (a copy of its bytes)
        # Every file was taken as its event arrived: none waits in the folder; the six arrays
        # still map theirs, held until they go.
        folder = shared_folder(worker.pid)
        assert sorted(os.listdir(folder)) == [".lock", "free", "held"]
        assert len(os.listdir(os.path.join(folder, "held"))) == 6
        pid = worker.pid
    assert folders(pid) == [], "nothing left once the worker exits"


def shared_folder(pid: int) -> str:
    (name,) = folders(pid)
    return next(os.path.join(r, name) for r in ROOTS if os.path.isdir(os.path.join(r, name)))


def test_memory_given_back_is_written_again_and_kept_arrays_stay_as_they_were(binary: str, server: LoopbackServer) -> None:
    """An array dropped gives its file back: the worker writes later images into that memory
    instead of fresh pages. An array still alive keeps its pixels, however many images follow."""
    numpy = pytest.importorskip("numpy")
    import gc

    sources = [server.url("/files/testimgp.jpg"), server.url("/files/test.webp")]
    with image_worker.Worker(binary) as worker:
        expected = [worker.download(url, format="rgba", inline=True).result().to_numpy().copy() for url in sources]
        kept = worker.download(sources[0] + "?kept", format="rgba").result().to_numpy()
        folder = shared_folder(worker.pid)
        held = os.path.join(folder, "held")
        kept_file = os.listdir(held)
        assert len(kept_file) == 1
        inodes = []
        for n in range(12):
            image = worker.download(sources[n % 2] + f"?n={n}", format="rgba").result()
            array = image.to_numpy()
            assert numpy.array_equal(array, expected[n % 2]), n
            (new,) = set(os.listdir(held)) - set(kept_file)
            inodes.append(os.stat(os.path.join(held, new)).st_ino)
            del image, array
            gc.collect()
            assert os.listdir(held) == kept_file, "given back once nothing maps it"
        assert len(set(inodes)) <= 3, f"written again into the memory given back: {inodes}"
        assert numpy.array_equal(kept, expected[0]), "a kept array never changes"
        pid = worker.pid
    assert folders(pid) == []
    assert numpy.array_equal(kept, expected[0]), "the mapping outlives the worker's folder"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_an_array_keeps_its_pixels_in_a_forked_child_after_the_parent_drops_it(binary: str, server: LoopbackServer) -> None:
    """to_numpy(), os.fork(), the parent drops its array and goes on downloading: the file is not
    given back for the worker to write the next image into, so the child's array (the same
    mapping) stays the image it was."""
    numpy = pytest.importorskip("numpy")
    import gc

    sources = [server.url("/files/testimgp.jpg"), server.url("/files/test.webp")]
    with image_worker.Worker(binary) as worker:
        expected = worker.download(sources[0], format="rgba", inline=True).result().to_numpy().copy()
        array = worker.download(sources[0] + "?forked", format="rgba").result().to_numpy()
        assert numpy.array_equal(array, expected)
        ready_r, ready_w = os.pipe()
        go_r, go_w = os.pipe()
        child = os.fork()
        if child == 0:  # the child: waits while the parent drops its array and downloads more
            code = 1
            try:
                os.close(ready_r)
                os.close(go_w)
                os.write(ready_w, b"r")
                os.read(go_r, 1)
                code = 0 if numpy.array_equal(array, expected) else 3
                del array
                gc.collect()
            finally:
                os._exit(code)
        os.close(ready_w)
        os.close(go_r)
        assert os.read(ready_r, 1) == b"r"
        held = os.path.join(shared_folder(worker.pid), "held")
        assert len(os.listdir(held)) == 1, "the array maps its file"
        del array
        gc.collect()
        assert os.listdir(held) == [], "dropped in this process"
        # Other pixels of about that size follow (the image scaled down a little): a file given
        # back would be written into now.
        for n in range(8):
            later = worker.download(sources[0] + f"?after={n}", format="rgba", max_pixel_size=200).result().to_numpy()
            del later
            gc.collect()
        os.write(go_w, b"g")
        _, status = os.waitpid(child, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child's array changed under it"
        pid = worker.pid
    assert folders(pid) == []


def test_a_killed_client_leaves_nothing_in_shared_memory(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    """The client process dies (SIGKILL) with results waiting: its worker sees stdin end and its
    reader gone, and removes the files nobody can take."""
    script = tmp_path / "client.py"
    slow = server.url("/files/testimgp.jpg?chunk=4096&delayMs=20")
    script.write_text(textwrap.dedent(f"""
        import os, signal, sys
        import image_worker
        worker = image_worker.Worker({binary!r})
        worker.configure(max_concurrent_downloads=2)
        print(worker.pid, flush=True)
        urls = [{slow!r} + f"&n={{i}}" for i in range(40)]
        for n, outcome in enumerate(worker.iter_downloads(urls, format="rgba", concurrency=8)):
            if n == 3:
                os.kill(os.getpid(), signal.SIGKILL)
    """))
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    worker_pid = int(process.stdout.readline())
    assert process.wait(timeout=60) == -signal.SIGKILL
    assert gone(worker_pid), "the worker ends when its client is gone"
    assert folders(worker_pid) == []


def test_a_killed_worker_leaves_nothing_in_shared_memory(binary: str, server: LoopbackServer) -> None:
    """The worker dies (SIGKILL) with files written and not all taken: the client removes its folder."""
    worker = image_worker.Worker(binary)
    try:
        worker.configure(shared_max_images=1)
        urls = [server.url(f"/files/testimgp.jpg?chunk=2048&delayMs=30&k={i}") for i in range(12)]
        handles = [worker.download(url, format="rgba") for url in urls]
        handles[0].result(timeout=30)  # its file held by the handle's result
        pid = worker.pid
        assert len(os.listdir(os.path.join(shared_folder(pid), "held"))) >= 1
        os.kill(pid, signal.SIGKILL)
        for handle in handles[1:]:
            try:
                handle.result(timeout=30)
            except image_worker.ImageWorkerError:
                pass
        deadline = time.monotonic() + 10
        while folders(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert folders(pid) == []
    finally:
        worker.close()


def _worker_folder(tmp_path: Path, pid: int) -> Tuple[Path, Path, Callable[[str, int], str]]:
    """A worker's folder with its ``held/`` and ``free/``, and a maker of held files (sparse: a
    size without memory) that returns each one's path."""
    folder = tmp_path / f"image-worker-{pid}-abc"
    (folder / "held").mkdir(parents=True)
    free = folder / "free"
    free.mkdir()

    def held(name: str, size: int) -> str:
        path = folder / "held" / name
        with open(path, "wb") as f:
            f.truncate(size)
        return str(path)

    return folder, free, held


def test_a_file_is_given_back_only_while_free_stays_within_the_workers_bounds(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker's folder as the client sees it: a taken file goes into ``free/`` while that holds
    fewer than 16 files and at most 64 MiB with it (sparse files: sizes without memory), else it
    is unlinked."""
    from image_worker import _shared

    # 64 MiB whatever the size of the file system under tmp_path (an eighth of it may be less).
    monkeypatch.setattr(_shared, "free_byte_cap", lambda folder: _shared.MAX_FREE_BYTES)
    folder, free, held = _worker_folder(tmp_path, 1)

    def parked(name: str, size: int) -> None:
        with open(free / name, "wb") as f:
            f.truncate(size)

    # Room for it: moved.
    _shared._give_back(held("a.rgba", 1000), 1000)
    assert sorted(os.listdir(free)) == ["a.rgba"] and os.listdir(folder / "held") == []
    # Bytes: 60 MiB there, 4 MiB + 1 more would pass 64 MiB: unlinked; 4 MiB - 1000 fits exactly.
    parked("big", 60 << 20)
    _shared._give_back(held("b.rgba", (4 << 20) + 1), (4 << 20) + 1)
    assert sorted(os.listdir(free)) == ["a.rgba", "big"] and os.listdir(folder / "held") == []
    _shared._give_back(held("c.rgba", (4 << 20) - 1000), (4 << 20) - 1000)
    assert sorted(os.listdir(free)) == ["a.rgba", "big", "c.rgba"]
    # Files: 16 there already (small ones), one more is unlinked.
    for name in os.listdir(free):
        os.unlink(free / name)
    for n in range(_shared.MAX_FREE_FILES):
        parked(f"x{n}", 10)
    _shared._give_back(held("d.rgba", 10), 10)
    assert len(os.listdir(free)) == _shared.MAX_FREE_FILES and "d.rgba" not in os.listdir(free)
    assert os.listdir(folder / "held") == []


def test_giving_back_counts_its_own_files_without_a_stat_and_forgets_those_taken(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The files this process moved into ``free/`` count by the sizes it knew (one ``listdir``
    per give-back, no ``lstat`` of each); one the worker took since counts nothing, and one put
    there by anything else is looked at."""
    from image_worker import _shared

    monkeypatch.setattr(_shared, "free_byte_cap", lambda folder: _shared.MAX_FREE_BYTES)
    folder, free, held = _worker_folder(tmp_path, 2)
    looked_at: List[str] = []
    real_lstat = os.lstat

    def counting_lstat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        looked_at.append(os.path.basename(str(path)))
        return real_lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting_lstat)
    _shared._give_back(held("1.rgba", 40 << 20), 40 << 20)
    _shared._give_back(held("2.rgba", 20 << 20), 20 << 20)
    assert sorted(os.listdir(free)) == ["1.rgba", "2.rgba"] and looked_at == []
    # 60 MiB there: 5 MiB more would pass 64 MiB (unlinked), without a stat.
    _shared._give_back(held("3.rgba", 5 << 20), 5 << 20)
    assert sorted(os.listdir(free)) == ["1.rgba", "2.rgba"] and looked_at == []
    # The worker takes the 40 MiB file (renames it out): then 5 MiB fits.
    os.rename(free / "1.rgba", folder / "4.rgba")
    _shared._give_back(held("5.rgba", 5 << 20), 5 << 20)
    assert sorted(os.listdir(free)) == ["2.rgba", "5.rgba"] and looked_at == []
    # A file this process did not put there is looked at, and counts: 20 + 5 + 38 = 63 MiB.
    with open(free / "other", "wb") as f:
        f.truncate(38 << 20)
    _shared._give_back(held("6.rgba", 2 << 20), 2 << 20)
    assert looked_at == ["other"] and "6.rgba" not in os.listdir(free)
    _shared._give_back(held("7.rgba", 1 << 20), 1 << 20)
    assert sorted(os.listdir(free)) == ["2.rgba", "5.rgba", "7.rgba", "other"]
    assert os.listdir(folder / "held") == []
    # Its worker gone, the folder's sizes are forgotten.
    _shared.remove_folders(2)
    assert not any(key.startswith(str(folder)) for key in _shared._given)


FULL_SHM_CHILD = textwrap.dedent("""
    import json, os, sys
    import numpy
    import image_worker
    binary, urls = sys.argv[1], sys.argv[2:]

    def size(path):
        try:
            return os.lstat(path).st_size
        except OSError:
            return 0  # taken by the worker meanwhile

    if binary == "--slow":
        # A slow reader that drops each array: how full /dev/shm ever gets.
        import threading, time
        binary, urls = urls[0], urls[1:]
        peak, done = [0], []

        def watch():
            while not done:
                st = os.statvfs("/dev/shm")
                peak[0] = max(peak[0], (st.f_blocks - st.f_bfree) * st.f_frsize)
                time.sleep(0.001)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with image_worker.Worker(binary) as worker:
            ok, shared = 0, 0
            for outcome in worker.iter_downloads(urls, format="rgba"):
                ok += outcome.ok and outcome.image.to_numpy().shape == (149, 227, 4)
                shared += outcome.ok and outcome.image.data is None
                time.sleep(0.03)
        done.append(True)
        watcher.join()
        st = os.statvfs("/dev/shm")
        print(json.dumps({"ok": ok, "shared": shared, "peak": peak[0], "size": st.f_blocks * st.f_frsize}))
        sys.exit(0)
    if binary == "--drop":
        # Arrays dropped as they come: how much free/ ever holds.
        binary, urls = urls[0], urls[1:]
        with image_worker.Worker(binary) as worker:
            most, ok = 0, 0
            for outcome in worker.iter_downloads(urls, format="rgba"):
                ok += outcome.ok and outcome.image.to_numpy().shape == (149, 227, 4)
                (name,) = [n for n in os.listdir("/dev/shm") if n.startswith("image-worker-")]
                free = os.path.join("/dev/shm", name, "free")
                most = max(most, sum(size(os.path.join(free, n)) for n in os.listdir(free)))
            print(json.dumps({"ok": ok, "most": most, "cap": image_worker._shared.free_byte_cap(free)}))
        sys.exit(0)
    import warnings
    warnings.simplefilter("always")  # every warnings.warn call counted, not one per place
    shown = []
    warnings.showwarning = lambda message, category, *rest: shown.append((category.__name__, str(message)))
    with image_worker.Worker(binary) as worker:
        expected = worker.download(urls[0], format="rgba", inline=True).result().to_numpy().copy()
        kept, shared, inline, failed = [], 0, 0, []
        for outcome in worker.iter_downloads(urls, format="rgba"):
            if not outcome.ok:
                failed.append(str(outcome.error))
                continue
            image = outcome.image
            kept.append(image.to_numpy())
            shared += image.buffer is not None and image.data is None
            inline += image.data is not None
        same = all(numpy.array_equal(array, expected) for array in kept)
        for array in kept:
            array[0, 0, 0] ^= 0xFF  # writable, shared or inline
        said = sum("shared memory is full" in line for line in worker.stderr_tail)
        codes = [w.code for w in worker.warnings]
    print(json.dumps({"ok": len(kept), "shared": shared, "inline": inline, "failed": failed[:3], "same": same,
                      "said": said, "shown": shown, "codes": codes}))
""")


def run_in_a_small_dev_shm(arguments: List[str]) -> Dict[str, Any]:
    """FULL_SHM_CHILD with ``arguments``, in a mount namespace of its own with a 4 MiB tmpfs on
    /dev/shm (a container's is often 64 MB): the JSON it prints. Skips the test where that
    namespace is not allowed (``unshare --mount`` needs root or user namespaces)."""
    pytest.importorskip("numpy")
    mount = "mount -t tmpfs -o size=4m tmpfs /dev/shm"
    try:
        allowed = subprocess.run(["unshare", "--mount", "sh", "-c", mount], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        allowed = False
    if not allowed:
        pytest.skip("no mount namespace here (unshare --mount needs root or user namespaces)")
    script = f"{mount} && exec {sys.executable} -c \"$0\" \"$@\""
    run = subprocess.run(["unshare", "--mount", "sh", "-c", script, FULL_SHM_CHILD] + arguments,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result: Dict[str, Any] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def test_a_full_dev_shm_sends_the_images_that_do_not_fit_inline(binary: str, server: LoopbackServer) -> None:
    """A container's /dev/shm is often 64 MB, and a script may keep every array it is given: when
    shared memory has no room, images come inline (base64) instead, and none fails."""
    # 60 images of 227 x 149 RGBA (135 KB each, 8 MB in all) into 4 MiB, every array kept.
    result = run_in_a_small_dev_shm([binary] + [server.url(f"/files/testimgp.jpg?n={i}") for i in range(60)])
    assert result["failed"] == [] and result["ok"] == 60, result
    assert result["same"], "the same pixels either way"
    assert result["shared"] > 0 and result["inline"] > 0, result
    assert result["said"] == 1, "the worker says why on its stderr, once"
    # ... and the client shows it to the person running the script (it was only in stderr_tail).
    assert result["codes"] == ["sharedMemoryFull"], result
    full = [text for category, text in result["shown"] if category == "ImageWorkerWarning"]
    assert len(full) == 1 and "shared memory is full" in full[0] and "--shm-size" in full[0], result["shown"]


def test_a_slow_reader_never_fills_a_small_dev_shm(binary: str, server: LoopbackServer) -> None:
    """Images waiting for a slow reader hold at most a quarter of a small /dev/shm, and a quarter
    of it stays free for other programs (a data loader's workers): before, 64 MB filled to the
    last page while a script took an image every 30 ms and dropped it."""
    result = run_in_a_small_dev_shm(["--slow", binary] + [server.url(f"/files/testimgp.jpg?n={i}") for i in range(80)])
    # The client sends fewer URLs ahead while its images wait (a quarter of 4 MiB, 1 MiB, of
    # 136 KiB images: 7 in flight): all of them through shared memory, none inline.
    assert result["ok"] == 80 and result["shared"] == 80, result
    # A quarter free, give or take the images decode threads were writing at once (136 KiB each).
    assert result["peak"] <= result["size"] * 3 // 4 + 3 * 136 * 1024, result


def test_free_memory_kept_for_later_images_is_an_eighth_of_a_small_dev_shm(binary: str, server: LoopbackServer) -> None:
    """On a small /dev/shm the files given back for later images hold at most an eighth of it,
    leaving the rest to other programs."""
    result = run_in_a_small_dev_shm(["--drop", binary] + [server.url(f"/files/testimgp.jpg?n={i}") for i in range(40)])
    assert result["ok"] == 40 and result["cap"] == (4 << 20) // 8, result
    assert 0 < result["most"] <= result["cap"], result
