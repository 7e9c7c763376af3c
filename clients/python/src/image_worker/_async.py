"""The asyncio client: the same protocol, on the event loop (no threads)."""

from __future__ import annotations

import asyncio
import collections
from typing import (TYPE_CHECKING, Any, AsyncGenerator, AsyncIterator, Callable, Deque, Dict, Generator, Iterable, List,
                    Mapping, Optional, Sequence, TextIO, Union)

from . import _shared
from ._binary import find_binary
from ._bulk import Entry, Failed, Outcome, check_many, iter_async
from ._core import END, WORKER_ARGS, Router, WorkerState, check_grace, queued_event, run_actions, shutdown_ms
from ._options import DownloadOptions, ManyOptions, PathLike, Priority, Settings, Token, check_priority, configure_params, download_params
from ._errors import ImageWorkerError, WorkerClosed, WorkerExited
from ._events import Completed, Event, Image

if TYPE_CHECKING:
    from typing_extensions import Unpack


def _fail_future(future: "asyncio.Future[Any]", error: BaseException) -> None:
    """Fails ``future`` and marks its exception retrieved: whoever awaits it still gets the
    error, and nobody awaiting it (a handle left alone, a call interrupted by Ctrl-C) is not a
    bug worth asyncio's "Future exception was never retrieved" at exit."""
    future.set_exception(error)
    future.exception()


class AsyncDownloadHandle:
    """One download, for asyncio: ``async for event in handle``, ``await handle`` (or
    ``await handle.result()``), ``await handle.cancel()``, ``await handle.set_priority(p)``."""

    def __init__(self, worker: "AsyncWorker", token: Token, url: str,
                 on_event: Optional[Callable[[Event], None]] = None) -> None:
        self.worker = worker
        self.token = token
        self.url = url
        self._on_event = on_event
        self._events: "asyncio.Queue[object]" = asyncio.Queue()
        self._result: "asyncio.Future[Image]" = asyncio.get_running_loop().create_future()
        self.completed: Optional[Completed] = None

    def __repr__(self) -> str:
        return f"<AsyncDownloadHandle {self.token!r} {self.url} {'done' if self.done() else 'live'}>"

    def _deliver(self, event: Event) -> None:
        self._events.put_nowait(event)
        if self._on_event is not None:
            self._on_event(event)
        if isinstance(event, Completed) and not self._result.done():
            self.completed = event
            if event.error is not None:
                _fail_future(self._result, event.error)
            else:
                assert event.image is not None
                self._result.set_result(event.image)
            self._events.put_nowait(END)

    def _fail(self, error: BaseException) -> None:
        if self._result.done():
            return
        _fail_future(self._result, error)
        self._events.put_nowait(error)
        self._events.put_nowait(END)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Event]:
        while True:
            event = queued_event(await self._events.get())
            if event is None:
                return
            yield event

    def done(self) -> bool:
        return self._result.done()

    async def result(self, timeout: Optional[float] = None) -> Image:
        """The delivered image, or the download's error raised."""
        return await asyncio.wait_for(asyncio.shield(self._result), timeout)

    def __await__(self) -> Generator[Any, None, Image]:
        return self.result().__await__()

    async def cancel(self) -> bool:
        if self.done():
            return False
        return await self.worker.cancel(self.token)

    async def set_priority(self, priority: Priority) -> bool:
        check_priority(priority)
        if self.done():
            return False
        return await self.worker.set_priority(self.token, priority)


class AsyncWorker(WorkerState):
    """An image-worker process driven from asyncio: ``async with AsyncWorker() as worker``.
    Same options as :class:`Worker`."""

    def __init__(self, binary: Optional[str] = None, *, args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None, stderr_lines: int = 40, start_timeout: float = 30.0) -> None:
        self.binary, self.binary_source = find_binary(binary)
        self._args = list(args)
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._start_timeout = start_timeout
        self._router = Router("py-")
        self._stderr: Deque[str] = collections.deque(maxlen=stderr_lines)
        self._process: Optional[asyncio.subprocess.Process] = None
        self._tasks: List["asyncio.Task[None]"] = []
        self._closing = False
        self._closed = False
        self.info: Dict[str, Any] = {}

    async def start(self) -> "AsyncWorker":
        """Spawns the worker and sends ``initialize`` (``async with`` does this)."""
        self._process = await asyncio.create_subprocess_exec(
            self.binary, *WORKER_ARGS, *self._args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, env=self._env, cwd=self._cwd, start_new_session=True)
        stderr_task = asyncio.ensure_future(self._read_stderr())
        self._tasks = [stderr_task, asyncio.ensure_future(self._read_stdout(stderr_task))]
        try:
            self.info = await asyncio.wait_for(self._call("initialize", {"client": "image_worker (python asyncio)"}),
                                               self._start_timeout)
        except BaseException:
            await self._kill()
            raise
        return self

    async def __aenter__(self) -> "AsyncWorker":
        return await self.start()

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        await self.close(cancel_pending=exc_type is not None)

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    @property
    def stderr_tail(self) -> List[str]:
        return list(self._stderr)

    async def _read_stdout(self, stderr_task: "asyncio.Task[None]") -> None:
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        pending = b""
        while True:
            # Chunks, not readline(): StreamReader.readline stops at 64 KiB, inline images don't.
            chunk = await stdout.read(1 << 16)
            if not chunk:
                break
            pending += chunk
            if b"\n" not in chunk:
                continue
            *lines, pending = pending.split(b"\n")
            for line in lines:
                run_actions(self._router.route(line))
        if pending.strip():
            run_actions(self._router.route(pending))
        code = await self._process.wait()
        _shared.remove_folders(self._process.pid)  # what a killed worker could not clean
        try:
            await asyncio.wait_for(asyncio.shield(stderr_task), 2)
        except asyncio.TimeoutError:
            pass
        error: BaseException
        if self._closing:
            error = WorkerClosed("the worker was closed")
        else:
            error = WorkerExited(code, list(self._stderr), "the image-worker process exited unexpectedly")
        run_actions(self._router.fail_all(error))

    async def _read_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        stderr = self._process.stderr
        while True:
            line = await stderr.readline()
            if not line:
                return
            self._stderr.append(line.decode("utf-8", "replace").rstrip("\n"))

    def _check_usable(self) -> None:
        if self._router.failure is not None:
            raise self._router.failure
        if self._closing or self._process is None:
            raise WorkerClosed("the worker is closed" if self._process is not None else "the worker was not started")

    async def _write(self, data: bytes) -> None:
        assert self._process is not None and self._process.stdin is not None
        try:
            self._process.stdin.write(data)
            await self._process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the reader reports the exit to every waiter

    async def _call(self, method: str, params: Optional[Mapping[str, Any]] = None) -> Any:
        self._check_usable()
        future: "asyncio.Future[Any]" = asyncio.get_running_loop().create_future()

        def reply(result: Optional[Any], error: Optional[BaseException]) -> None:
            if future.done():
                return
            if error is not None:
                _fail_future(future, error)
            else:
                future.set_result(result)

        await self._write(self._router.request(method, params, reply))
        return await future

    async def download(self, url: str, *, token: Optional[Token] = None,
                       on_event: Optional[Callable[[Event], None]] = None, **options: Unpack[DownloadOptions]) -> AsyncDownloadHandle:
        """Starts a download (options as :meth:`Worker.download`) and returns its handle once
        the worker accepted it."""
        self._check_usable()
        chosen: Token = token if token is not None else self._router.new_token()
        params = download_params(url, chosen, options)
        handle = AsyncDownloadHandle(self, chosen, url, on_event)
        self._router.add_handle(chosen, handle)
        try:
            await self._call("download", params)
        except BaseException as error:
            self._router.drop_handle(chosen)
            handle._fail(error)
            raise
        return handle

    async def download_many(self, urls: Sequence[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                            progress: Union[bool, TextIO] = True, manifest: Optional[PathLike] = None, resume: bool = False,
                            **options: Unpack[ManyOptions]) -> List[Outcome]:
        """:func:`image_worker.download_many` on this worker, for asyncio: one :class:`Outcome` per
        URL, in input order. Cancelling the task cancels what is under way (the manifest keeps
        every URL that ended)."""
        check_many(urls, dir, concurrency, options)
        outcomes: List[Optional[Outcome]] = [None] * len(urls)
        generator = iter_async(self, urls, dir, concurrency, progress, manifest, resume, options)
        try:
            async for outcome in generator:
                outcomes[outcome.index] = outcome
        finally:
            await generator.aclose()
        return [o if o is not None else Failed(str(urls[i]), ImageWorkerError("lost"), i)
                for i, o in enumerate(outcomes)]

    def iter_downloads(self, urls: Iterable[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                       progress: Union[bool, TextIO] = False, manifest: Optional[PathLike] = None, resume: bool = False,
                       **options: Unpack[ManyOptions]) -> AsyncGenerator[Outcome, None]:
        """:func:`image_worker.iter_downloads` for asyncio: ``async for outcome in
        worker.iter_downloads(urls, "out")`` yields each URL's :class:`Outcome` as it ends. To cancel
        the rest as soon as you leave the loop early, close it: ``async with
        contextlib.aclosing(worker.iter_downloads(...)) as outcomes`` (else it is closed when
        collected)."""
        check_many(urls, dir, concurrency, options, sequence=False)
        return iter_async(self, urls, dir, concurrency, progress, manifest, resume, options)

    async def cancel(self, token: Token) -> bool:
        result = await self._call("cancel", {"token": token})
        return bool(result.get("found")) if isinstance(result, dict) else False

    async def set_priority(self, token: Token, priority: Priority) -> bool:
        check_priority(priority)
        result = await self._call("setPriority", {"token": token, "priority": priority})
        return bool(result.get("found")) if isinstance(result, dict) else False

    async def cancel_all(self) -> int:
        result = await self._call("cancelAll")
        return int(result.get("cancelled", 0)) if isinstance(result, dict) else 0

    async def configure(self, **settings: Unpack[Settings]) -> Dict[str, Any]:
        result = await self._call("configure", configure_params(settings))
        return dict(result.get("configuration", {})) if isinstance(result, dict) else {}

    async def status(self) -> Dict[str, Any]:
        result = await self._call("status")
        return dict(result) if isinstance(result, dict) else {}

    async def close(self, cancel_pending: bool = False, timeout: float = 30.0, grace: float = 2.0) -> Optional[int]:
        """As :meth:`Worker.close`: shutdown (``grace`` seconds for what runs, then it is
        cancelled), exit, wait (kill after ``timeout``)."""
        check_grace(grace)
        if self._closed or self._process is None:
            return self._process.returncode if self._process is not None else None
        if self._router.failure is None and not self._closing:
            try:
                # The worker's own bound: what has not finished then is cancelled, with its events.
                await asyncio.wait_for(
                    self._call("shutdown", {"cancelPending": cancel_pending, "timeoutMs": shutdown_ms(grace, timeout)}), timeout)
                self._closing = True
                await self._write(Router.notification("exit"))
            except (ImageWorkerError, asyncio.TimeoutError, OSError):
                pass
        self._closing = True
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), timeout)
        except asyncio.TimeoutError:
            await self._kill()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._closed = True
        run_actions(self._router.fail_all(WorkerClosed("the worker was closed")))
        return self._process.returncode

    async def _kill(self) -> None:
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await self._process.wait()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
