from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from image_worker import AsyncWorker, Cancelled, Completed, InvalidDownloadStatusCode, PartialImage, Progress, \
    RequestError, Started, WorkerExited
from loopback import LoopbackServer


def run(coroutine: object) -> None:
    asyncio.run(coroutine)  # type: ignore[arg-type]


def test_async_download_events_and_result(binary: str, server: LoopbackServer, tmp_path: Path, samples: Path) -> None:
    async def main() -> None:
        async with AsyncWorker(binary) as worker:
            handle = await worker.download(server.url("/files/testorig.jpg?chunk=2000&delayMs=5"), dir=str(tmp_path))
            events = [event async for event in handle]
            image = await handle
            assert isinstance(events[0], Started) and isinstance(events[-1], Completed)
            assert any(isinstance(e, Progress) for e in events)
            assert image.read_bytes() == (samples / "testorig.jpg").read_bytes()
            with pytest.raises(InvalidDownloadStatusCode):
                await (await worker.download(server.url("/status/404"))).result(30)
            with pytest.raises(RequestError):
                await worker.download(server.url("/files/testorig.jpg"), progressive=True, format="original")
            # Many at once, one of them a large inline line (rgba: ~180 KB of base64).
            handles = [await worker.download(server.url("/files/testorig.jpg"), inline=True, format="rgba")
                       for _ in range(5)]
            images = await asyncio.gather(*handles)
            assert all(i.data is not None and len(i.data) == 227 * 149 * 4 for i in images)
    run(main())


def test_async_partial_images_cancel_and_priority(binary: str, server: LoopbackServer, tmp_path: Path) -> None:
    async def main() -> None:
        async with AsyncWorker(binary) as worker:
            handle = await worker.download(server.url("/files/basi6a08.png?chunk=60&delayMs=20"), inline=True,
                                           format="rgba", progressive=True, partial_interval_ms=0)
            partials = [e async for e in handle if isinstance(e, PartialImage)]
            image = await handle
            assert partials and all(p.data is not None for p in partials)
            assert image.width == 32 and partials[-1].passes <= 7
            hanging = await worker.download(server.url("/hang"))
            assert await hanging.set_priority("high") is True
            assert await hanging.cancel() is True
            with pytest.raises(Cancelled):
                await hanging
    run(main())


def test_async_worker_crash_fails_pending_handles(binary: str, server: LoopbackServer) -> None:
    async def main() -> None:
        worker = await AsyncWorker(binary, args=["--log-level", "debug"]).start()
        handles = [await worker.download(server.url("/hang")) for _ in range(2)]
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)
        for handle in handles:
            with pytest.raises(WorkerExited, match="killed by signal 9"):
                await handle.result(30)
        with pytest.raises(WorkerExited):
            await worker.download(server.url("/files/testorig.jpg"))
        await worker.close()
    run(main())


def test_async_close_cancels_on_error(binary: str, server: LoopbackServer) -> None:
    async def main() -> None:
        with pytest.raises(KeyError):
            async with AsyncWorker(binary) as worker:
                hanging = await worker.download(server.url("/hang"))
                raise KeyError("boom")
        with pytest.raises(Cancelled):
            await hanging.result(10)
        assert worker.pid is not None
        with pytest.raises(OSError):
            os.kill(worker.pid, 0)
    run(main())


def test_handles_nobody_awaited_log_nothing(binary: str, server: LoopbackServer) -> None:
    """Failed handles and interrupted calls nobody awaited must not print asyncio's "Future
    exception was never retrieved" (it did, once per handle, after a Ctrl-C)."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import asyncio, gc
        from image_worker import AsyncWorker

        async def main():
            worker = await AsyncWorker({binary!r}).start()
            failing = [await worker.download({server.url("/status/404")!r}) for _ in range(3)]
            hanging = [await worker.download({server.url("/hang")!r}) for _ in range(3)]
            # A call interrupted the way Ctrl-C interrupts asyncio.run: its task is cancelled.
            task = asyncio.ensure_future(worker.status())
            await asyncio.sleep(0)
            task.cancel()
            await asyncio.sleep(0.5)
            await worker.close(cancel_pending=True)
            del failing, hanging, task
            gc.collect()

        asyncio.run(main())
        gc.collect()
        print("done")
    """)
    run = subprocess.run([sys.executable, "-X", "dev", "-c", script], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "done"
    assert "never retrieved" not in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr


def test_ctrl_c_during_a_bulk_await_logs_nothing(binary: str, server: LoopbackServer) -> None:
    """Ctrl-C while awaiting many downloads ends with KeyboardInterrupt alone: no "never
    retrieved" report per handle or per call."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import asyncio, gc, sys
        from image_worker import AsyncWorker

        async def main():
            async with AsyncWorker({binary!r}) as worker:
                handles = [await worker.download({server.url("/hang")!r}) for _ in range(10)]
                handles += [await worker.download({server.url("/status/503")!r}) for _ in range(5)]
                print("ready", flush=True)
                await asyncio.gather(*handles, worker.status())

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        gc.collect()
    """)
    child = subprocess.Popen([sys.executable, "-X", "dev", "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert out.strip() == "interrupted", err
    assert "never retrieved" not in err, err
    assert "Traceback" not in err, err
