"""The synchronous client: a worker process driven from threads."""

from __future__ import annotations

import collections
import os
import queue
import subprocess
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import (TYPE_CHECKING, Any, Callable, Deque, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, TextIO,
                    Tuple, Union)

from . import _shared
from ._binary import find_binary
from ._bulk import Entry, Outcome, check_many, iter_sync, run_many
from ._core import END, WORKER_ARGS, Router, WorkerState, check_grace, queued_event, run_actions, shutdown_ms
from ._options import DownloadOptions, ManyOptions, PathLike, Priority, Settings, Token, check_priority, configure_params, download_params
from ._errors import DownloadError, ImageWorkerError, WorkerClosed, WorkerExited
from ._events import Completed, Event, Image

if TYPE_CHECKING:
    from typing_extensions import Unpack


class DownloadHandle:
    """One download: iterate its events, wait for its result, cancel it, change its priority.

    Iterating yields :class:`Started`, :class:`Response`, :class:`Progress`,
    :class:`PartialImage` and finally :class:`Completed` events; it raises the worker's failure
    if the worker goes away first. :meth:`result` returns the :class:`Image` or raises the
    download's error (a :class:`DownloadError` subclass per error code)."""

    def __init__(self, worker: "Worker", token: Token, url: str,
                 on_event: Optional[Callable[[Event], None]] = None) -> None:
        self.worker = worker
        self.token = token
        self.url = url
        self._on_event = on_event
        self._events: "queue.SimpleQueue[object]" = queue.SimpleQueue()
        self._done = threading.Event()
        self._image: Optional[Image] = None
        self._error: Optional[BaseException] = None
        self._callbacks: List[Callable[["DownloadHandle"], None]] = []
        self._lock = threading.Lock()
        self.completed: Optional[Completed] = None

    def __repr__(self) -> str:
        state = "done" if self._done.is_set() else "live"
        return f"<DownloadHandle {self.token!r} {self.url} {state}>"

    # Called by the worker's reader thread.
    def _deliver(self, event: Event) -> None:
        if isinstance(event, Completed):
            self.completed = event
            self._image, self._error = event.image, event.error
        self._events.put(event)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:  # a callback's bug must not kill the reader thread
                import traceback
                traceback.print_exc()
        if isinstance(event, Completed):
            self._events.put(END)
            self._end()

    def _fail(self, error: BaseException) -> None:
        if self._done.is_set():
            return
        self._error = error
        self._events.put(error)
        self._events.put(END)
        self._end()

    def _end(self) -> None:
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:  # a callback's bug must not kill the reader thread
                import traceback
                traceback.print_exc()

    def add_done_callback(self, callback: Callable[["DownloadHandle"], None]) -> None:
        """Calls ``callback(handle)`` once the download has ended, however (its Completed
        event, a refused request, the worker's end): at once if it already has; else on the
        reader thread."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def __iter__(self) -> Iterator[Event]:
        while True:
            event = queued_event(self._events.get())
            if event is None:
                return
            yield event

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits for the download to end; False on timeout."""
        return self._done.wait(timeout)

    def result(self, timeout: Optional[float] = None) -> Image:
        """The delivered image, once the download ends; raises its error otherwise, or
        ``TimeoutError`` after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"download {self.token!r} ({self.url}) still running after {timeout} s")
        if self._error is not None:
            raise self._error
        assert self._image is not None
        return self._image

    def exception(self, timeout: Optional[float] = None) -> Optional[BaseException]:
        """The error the download ended with, or None after a success."""
        if not self._done.wait(timeout):
            raise TimeoutError(f"download {self.token!r} ({self.url}) still running after {timeout} s")
        return self._error

    def cancel(self) -> bool:
        """Cancels the download; False when it had already ended. It still ends with a
        :class:`Completed` event (``outcome == "cancelled"``)."""
        if self._done.is_set():
            return False
        return bool(self.worker.cancel(self.token))

    def set_priority(self, priority: Priority) -> bool:
        """``veryLow``, ``low``, ``normal``, ``high`` or ``veryHigh``; False when it had ended."""
        check_priority(priority)
        if self._done.is_set():
            return False
        return bool(self.worker.set_priority(self.token, priority))


class Worker(WorkerState):
    """An image-worker process. Use it as a context manager, or call :meth:`close`.

    ``binary``: the executable (otherwise ``$IMAGE_WORKER_BIN``, ``PATH``, then the enclosing
    repository's ``.build/release``; :attr:`binary_source` says which). ``args``: extra
    command-line options, e.g. ``["--file-root", "/data"]``. ``stderr_lines``: how many of the
    worker's last stderr lines to keep for error messages."""

    def __init__(self, binary: Optional[str] = None, *, args: Sequence[str] = (), env: Optional[Mapping[str, str]] = None,
                 cwd: Optional[str] = None, stderr_lines: int = 40, start_timeout: float = 30.0) -> None:
        self.binary, self.binary_source = find_binary(binary)
        self._lock = threading.Lock()
        self._router = Router("py-")
        self._stderr: Deque[str] = collections.deque(maxlen=stderr_lines)
        self._closing = False
        self._closed = False
        self._process = subprocess.Popen(
            [self.binary, *WORKER_ARGS, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True)
        self._stderr_thread = threading.Thread(target=self._read_stderr, name="image-worker stderr", daemon=True)
        self._stdout_thread = threading.Thread(target=self._read_stdout, name="image-worker stdout", daemon=True)
        self._stderr_thread.start()
        self._stdout_thread.start()
        try:
            self.info: Dict[str, Any] = self._call("initialize", {"client": "image_worker (python)"}, timeout=start_timeout)
        except BaseException:
            self._kill()
            raise

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def stderr_tail(self) -> List[str]:
        """The worker's last lines of standard error."""
        with self._lock:
            return list(self._stderr)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        # Leaving on an error cancels what is still running; otherwise it finishes first.
        self.close(cancel_pending=exc_type is not None)

    # MARK: reading

    def _read_stdout(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        for line in stdout:  # a BufferedReader: lines of any length
            with self._lock:
                actions = self._router.route(line)
            run_actions(actions)
            # Not kept while the next line is awaited: a delivered image's memory goes back to
            # the worker as soon as the caller drops it.
            del actions
        try:
            code: Optional[int] = self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            _shared.remove_folders(self._process.pid)  # what a killed worker could not clean
        self._stderr_thread.join(timeout=2)
        with self._lock:
            if self._closing:
                error: BaseException = WorkerClosed("the worker was closed")
            else:
                error = WorkerExited(code, list(self._stderr), "the image-worker process exited unexpectedly")
            actions = self._router.fail_all(error)
        run_actions(actions)

    def _read_stderr(self) -> None:
        stderr = self._process.stderr
        assert stderr is not None
        for raw in stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._lock:
                self._stderr.append(line)

    # MARK: requests

    def _send(self, data: bytes) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(data)
            stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass  # the reader thread reports the exit to every waiter

    def _call(self, method: str, params: Optional[Mapping[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        if threading.current_thread() is self._stdout_thread:
            # From an on_event callback: the reply can only arrive on this very thread, so
            # send without waiting (None: the answer is not known).
            with self._lock:
                self._check_usable()
                self._send(self._router.request(method, params, lambda result, error: None))
            return None
        future: "Future[Any]" = Future()

        def reply(result: Optional[Any], error: Optional[BaseException]) -> None:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

        with self._lock:
            self._check_usable()
            line = self._router.request(method, params, reply)
            self._send(line)
        return future.result(timeout)

    def _check_usable(self) -> None:
        if self._router.failure is not None:
            raise self._router.failure
        if self._closing:
            raise WorkerClosed("the worker is closed")

    def download(self, url: str, *, token: Optional[Token] = None,
                 on_event: Optional[Callable[[Event], None]] = None, wait: bool = True,
                 **options: Unpack[DownloadOptions]) -> DownloadHandle:
        """Starts a download and returns its handle.

        Options (all optional): ``dir`` or ``path`` (deliver a file) or ``inline=True`` (the
        bytes in the event); ``format`` (``original``, ``png``, ``jpeg``, ``webp``, ``rgba``,
        ``rgb``, ``gray``; JPEG, PNG, WebP, GIF, AVIF and JPEG XL are decoded); ``quality`` (``jpeg`` and
        ``webp``), ``lossless`` (``webp``), ``chroma_subsampling`` (``jpeg``);
        ``progressive`` (partial images; PNG unless a format is given); ``priority``;
        ``headers``; ``timeout_ms`` (idle, per attempt); ``deadline_ms`` (over every attempt);
        ``max_retries`` and ``retry_delay_ms`` (this download's retries); ``credentials=(user, password)``; ``max_pixel_size``;
        ``max_pixel_count``; ``apply_orientation``; ``color_profile`` (``"srgb"`` or ``"keep"``); ``overwrite``; ``partial_interval_ms``;
        ``partial_max_pixel_size`` (partial images no larger than this; the final keeps its size);
        ``allow_invalid_certificates``; ``handle_cookies``; ``retry_failed``.
        ``on_event`` is called on the reader thread with every event.

        Raises :class:`RequestError` for a bad option, naming it, before anything is sent (the
        options are typed: see :class:`DownloadOptions`), or when the worker refuses the request.
        ``wait=False`` returns without waiting for the worker's answer (requests pipelined, as the
        bulk helpers send them): a refusal then fails the handle (``handle.exception()``)."""
        with self._lock:
            self._check_usable()
            chosen: Token = token if token is not None else self._router.new_token()
        params = download_params(url, chosen, options)
        handle = DownloadHandle(self, chosen, url, on_event)
        future: "Future[Any]" = Future()

        def reply(result: Optional[Any], error: Optional[BaseException]) -> None:
            if error is not None:
                with self._lock:
                    self._router.drop_handle(chosen)
                handle._fail(error)
                future.set_exception(error)
            else:
                future.set_result(result)

        with self._lock:
            self._check_usable()
            self._router.add_handle(chosen, handle)
            self._send(self._router.request("download", params, reply))
        if wait and threading.current_thread() is not self._stdout_thread:  # see _call
            future.result()
        return handle

    def download_many(self, urls: Sequence[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                      progress: Union[bool, TextIO] = True, manifest: Optional[PathLike] = None, resume: bool = False,
                      **options: Unpack[ManyOptions]) -> List[Outcome]:
        """See :func:`image_worker.download_many`; uses this worker."""
        return download_many(urls, dir, concurrency=concurrency, progress=progress, worker=self, manifest=manifest,
                             resume=resume, **options)

    def iter_downloads(self, urls: Iterable[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                       progress: Union[bool, TextIO] = False, manifest: Optional[PathLike] = None, resume: bool = False,
                       **options: Unpack[ManyOptions]) -> Iterator[Outcome]:
        """See :func:`image_worker.iter_downloads`; uses this worker."""
        return iter_downloads(urls, dir, concurrency=concurrency, progress=progress, worker=self, manifest=manifest,
                              resume=resume, **options)

    def cancel(self, token: Token) -> bool:
        """Cancels a download by token; False when it was unknown or had ended (True, without
        waiting for the answer, when called from an ``on_event`` callback)."""
        result = self._call("cancel", {"token": token})
        return bool(result.get("found")) if isinstance(result, dict) else result is None

    def set_priority(self, token: Token, priority: Priority) -> bool:
        check_priority(priority)
        result = self._call("setPriority", {"token": token, "priority": priority})
        return bool(result.get("found")) if isinstance(result, dict) else result is None

    def cancel_all(self) -> int:
        result = self._call("cancelAll")
        return int(result.get("cancelled", 0)) if isinstance(result, dict) else 0

    def configure(self, **settings: Unpack[Settings]) -> Dict[str, Any]:
        """Changes settings at run time (``max_concurrent_downloads=8``, ``execution_order="lifo"``,
        ``timeout_ms``, ``max_retries``, …; see :class:`Settings` and protocol/SPEC.md), all at
        once or not at all. Returns the configuration. A bad setting raises
        :class:`RequestError` naming it, before anything is sent."""
        result = self._call("configure", configure_params(settings))
        return dict(result.get("configuration", {})) if isinstance(result, dict) else {}

    def status(self) -> Dict[str, Any]:
        result = self._call("status")
        return dict(result) if isinstance(result, dict) else {}

    # MARK: the end

    def close(self, cancel_pending: bool = False, timeout: float = 30.0, grace: float = 2.0) -> Optional[int]:
        """Ends the worker: ``shutdown`` (running downloads get ``grace`` seconds, 2 by default, to
        finish; what is left then is cancelled, at once with ``cancel_pending``), then ``exit``.
        Kills it after ``timeout`` seconds. Every live handle has ended when this returns; no
        thread or process is left. Returns the exit status."""
        check_grace(grace)
        with self._lock:
            if self._closed:
                return self._process.returncode
            usable = self._router.failure is None and not self._closing
        if usable:
            try:
                # The worker's own bound: what has not finished then is cancelled, with its events.
                self._call("shutdown", {"cancelPending": cancel_pending, "timeoutMs": shutdown_ms(grace, timeout)},
                           timeout=timeout)
                with self._lock:
                    self._closing = True
                    self._send(Router.notification("exit"))
            except (ImageWorkerError, TimeoutError, FutureTimeout, OSError):  # distinct types before 3.11
                pass
        with self._lock:
            self._closing = True
        stdin = self._process.stdin
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._kill()
        self._stdout_thread.join(timeout=10)
        self._stderr_thread.join(timeout=10)
        for stream in (self._process.stdout, self._process.stderr):
            if stream is not None:
                stream.close()
        with self._lock:
            self._closed = True
            actions = self._router.fail_all(WorkerClosed("the worker was closed"))
        run_actions(actions)
        return self._process.returncode

    def _kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()

    def __del__(self) -> None:
        process = getattr(self, "_process", None)
        if process is not None and process.poll() is None:
            try:
                process.kill()
                process.wait(timeout=5)
            except Exception:
                pass


def download_many(urls: Sequence[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                  progress: Union[bool, TextIO] = True, worker: Optional[Worker] = None,
                  binary: Optional[str] = None, manifest: Optional[PathLike] = None, resume: bool = False,
                  **options: Unpack[ManyOptions]) -> List[Outcome]:
    """Downloads every URL (into ``dir`` unless other delivery options are given) with at most
    ``concurrency`` at once, showing a progress bar on stderr (tqdm when installed). Returns one
    :class:`Outcome` per URL, in the order given: every URL gets one, whatever happens (a
    refused request, a failed download, a worker that dies).

    ``urls``: URLs, or ``(url, name)`` pairs naming each file. ``name_template`` names the others
    (``{index}``, the URL's position from 0, ``{index:5}`` zero-padded, besides the worker's
    ``{token}``, ``{name}``, ``{ext}``, ``{host}``, ``{sha256:8}``). Originals are verified
    (``verify=False`` saves whatever came).

    ``manifest``: a ``.jsonl`` path (or ``.parquet``, with pyarrow) that gets one record per URL
    as it ends (``url``, ``index``, ``outcome``, ``path``, ``bytes``, ``format``, ``width``,
    ``height``, ``sha256``, ``error``, ``ms``); ``resume=True`` fetches only what it does not
    show as done (the others' outcomes come from it, ``skipped``) and keeps existing files.

    ``worker``: an existing :class:`Worker` (otherwise one is started and closed). Other
    options go to :meth:`Worker.download` (``format``, ``progressive``, ``max_pixel_size``…).

    Bad options (or ``concurrency``) raise :class:`RequestError` once, before anything starts,
    rather than failing every URL. Ctrl-C cancels what is under way and raises
    ``KeyboardInterrupt``; the manifest keeps every URL that ended (:func:`iter_downloads` hands
    each over as it ends)."""
    check_many(urls, dir, concurrency, options)
    active = worker if worker is not None else Worker(binary)
    return run_many(active, worker is None, urls, dir, concurrency, progress, options, manifest, resume)


def iter_downloads(urls: Iterable[Entry], dir: Optional[str] = None, *, concurrency: int = 6,
                   progress: Union[bool, TextIO] = False, worker: Optional[Worker] = None,
                   binary: Optional[str] = None, manifest: Optional[PathLike] = None, resume: bool = False,
                   **options: Unpack[ManyOptions]) -> Iterator[Outcome]:
    """:func:`download_many`, streaming: yields each URL's :class:`Outcome` as it ends, in order
    of completion (``outcome.index`` is its input position). ``urls`` may be any iterable,
    read as downloads are sent (a few times ``concurrency`` ahead), so a generator of millions of
    URLs is fine. Leaving the loop early (``break``, an exception, Ctrl-C) cancels what is under
    way; the manifest keeps every URL that ended. No progress bar unless ``progress``."""
    check_many(urls, dir, concurrency, options, sequence=False)
    active = worker if worker is not None else Worker(binary)
    return iter_sync(active, worker is None, urls, dir, concurrency, progress, manifest, resume, options)
