"""Pixels through shared memory, as users take them: ``iter_downloads(urls, format="rgba")`` and
``to_numpy()``, nothing left in /dev/shm however either side ends (SIGKILL included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import List

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
        # Every file was taken as its event arrived: the folder is empty.
        for name in folders(worker.pid):
            root = next(r for r in ROOTS if os.path.isdir(os.path.join(r, name)))
            assert [f for f in os.listdir(os.path.join(root, name)) if f != ".lock"] == []
        pid = worker.pid
    assert folders(pid) == [], "nothing left once the worker exits"


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
        handles[0].result(timeout=30)
        pid = worker.pid
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
