"""The bulk path: many URLs into a directory, with a progress bar."""

from __future__ import annotations

import queue
import sys
import threading
import time
from dataclasses import dataclass
from typing import (TYPE_CHECKING, Any, AsyncGenerator, Callable, Dict, Iterable, Iterator, List, Literal, Mapping, Optional, Protocol, Sequence,
                    Sized, TextIO, Tuple, Union)

if TYPE_CHECKING:
    import asyncio  # imported where used: it costs a sync user 90 ms at import

from . import _shared
from ._errors import ImageWorkerError
from ._events import Event, Image, Progress, Started
from ._manifest import ManifestFile, image_from_record, record
from ._option_table import BULK_QUEUE_DEPTH_PLUS, BULK_QUEUE_DEPTH_TIMES
from ._options import SETTING_RULES, DownloadOptions, ManyOptions, Settings, Token, check, download_params, invalid

if TYPE_CHECKING:
    from typing_extensions import Unpack


class _Handle(Protocol):
    """What the bulk path needs of a download handle (:class:`DownloadHandle` is one)."""

    token: Token

    def done(self) -> bool: ...

    def add_done_callback(self, callback: Callable[[Any], None]) -> None: ...

    def exception(self, timeout: Optional[float] = ...) -> Optional[BaseException]: ...

    def result(self, timeout: Optional[float] = ...) -> Image: ...


class _Downloads(Protocol):
    """What the bulk path needs of a worker (:class:`Worker` is one): it does not import the
    worker module, which calls it."""

    def configure(self, **settings: Unpack[Settings]) -> Any: ...

    def download(self, url: str, *, token: Optional[Token] = ..., on_event: Optional[Callable[[Event], None]] = ...,
                 wait: bool = ..., **options: Unpack[DownloadOptions]) -> _Handle: ...

    def cancel(self, token: Token) -> bool: ...

    def close(self, cancel_pending: bool = ..., timeout: float = ...) -> Optional[int]: ...


@dataclass(frozen=True)
class Succeeded:
    """A URL of a bulk job that ended with its image (``ok`` is True; ``error`` is None).
    ``index`` is the URL's position in the input (from 0); ``name`` the file name its entry gave."""

    url: str
    image: Image
    index: int = -1
    name: Optional[str] = None
    error: None = None

    @property
    def ok(self) -> Literal[True]:
        return True

    @property
    def skipped(self) -> bool:
        """The file was there already (``skip_existing``, or done in the resumed manifest)."""
        return self.image.skipped


@dataclass(frozen=True)
class Failed:
    """A URL of a bulk job that ended without an image (``ok`` is False; ``image`` is None): the
    exception says why (a :class:`DownloadError` subclass, or the request's refusal)."""

    url: str
    error: BaseException
    index: int = -1
    name: Optional[str] = None
    image: None = None

    @property
    def ok(self) -> Literal[False]:
        return False

    @property
    def skipped(self) -> Literal[False]:
        return False


#: What became of one URL of a bulk job: :class:`Succeeded` (``.image``) or :class:`Failed`
#: (``.error``). ``if outcome.ok:`` tells them apart for a type checker too: after it,
#: ``outcome.image`` is an :class:`Image`, and in the ``else`` branch ``outcome.error`` an exception.
Outcome = Union[Succeeded, Failed]
OUTCOME_TYPES = (Succeeded, Failed)


def outcome_of(url: str, image: Optional[Image], error: Optional[BaseException], index: int,
               name: Optional[str] = None) -> Outcome:
    """The outcome of a URL that ended with ``image`` or ``error`` (an error wins)."""
    if error is not None:
        return Failed(url, error, index, name)
    if image is None:
        return Failed(url, ImageWorkerError("ended with neither an image nor an error"), index, name)
    return Succeeded(url, image, index, name)


#: An input of the bulk helpers: a URL, or ``(url, name)`` to choose its file's name.
Entry = Union[str, Tuple[str, str]]


def entries(urls: Iterable[Entry]) -> Iterator[Tuple[int, str, Optional[str]]]:
    """``(index, url, name)`` for each input, in order (an entry that is neither a URL nor a pair
    is passed on as the URL: its download is refused, an outcome of its own)."""
    if isinstance(urls, (str, bytes)) or not isinstance(urls, Iterable):
        raise invalid("urls", f"must be an iterable of URLs, not {type(urls).__name__}")
    for index, entry in enumerate(urls):
        if isinstance(entry, str):
            yield index, entry, None
        elif isinstance(entry, (tuple, list)) and len(entry) == 2:
            yield index, entry[0], entry[1]
        else:
            yield index, entry, None


def bulk_options(dir: Optional[str], options: ManyOptions, manifest: Any, resume: bool,
                 progress: Union[bool, TextIO] = True) -> Dict[str, Any]:
    """The options every download of a bulk job gets: the given ones, ``dir``, and the bulk
    defaults (``verify`` for originals; ``sha256`` with a manifest; ``skip_existing`` when resuming;
    ``quiet`` without a progress bar: the job reads nothing but each URL's end)."""
    each: Dict[str, Any] = dict(options)
    if progress is False and "quiet" not in each and not each.get("progressive"):
        each["quiet"] = True
    if dir is not None:
        each["dir"] = dir
    if each.get("format", "original") == "original" and not each.get("progressive") and "verify" not in each:
        each["verify"] = True
    if manifest is not None and "sha256" not in each:
        each["sha256"] = True
    if resume and "skip_existing" not in each and not each.get("overwrite") and ("dir" in each or "path" in each):
        each["skip_existing"] = True
    return each


def entry_options(each: Mapping[str, Any], index: int, name: Optional[str]) -> Dict[str, Any]:
    """One entry's options: its own ``name``, or the template with its ``index`` (the worker
    fills ``{index}`` and ``{index:N}``)."""
    mine = dict(each)
    if name is not None:
        mine.pop("name_template", None)
        mine["name"] = name
    elif isinstance(mine.get("name_template"), str):
        mine["index"] = index
    return mine


def window(concurrency: int) -> int:
    """Downloads sent ahead of their turn (the schema's ``x-client-bulk``): enough that the worker
    never waits for the client, few enough that a million-URL input is not a million queued tokens."""
    return max(concurrency * BULK_QUEUE_DEPTH_TIMES, concurrency + BULK_QUEUE_DEPTH_PLUS)


def _human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


class PlainProgress:
    """A one-line progress bar: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, total: Optional[int], stream: TextIO, rates: bool = False) -> None:
        self.total = total
        self.stream = stream
        self.rates = rates
        self._start = time.monotonic()
        self.done = 0
        self.failed = 0
        self.bytes = 0
        self._tty = hasattr(stream, "isatty") and stream.isatty()
        self._last = 0.0
        self._lock = threading.Lock()

    def update(self, done: int, failed: int, received: int) -> None:
        with self._lock:
            self.done, self.failed, self.bytes = done, failed, received
            now = time.monotonic()
            if now - self._last >= (0.1 if self._tty else 2.0) or done == self.total:
                self._last = now
                self._draw()

    def _draw(self) -> None:
        width = 30
        if self.total is None:  # an input of unknown length: counts only
            text = f"{self.done} images"
        else:
            filled = width * self.done // self.total if self.total else width
            text = f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} images"
        text = (text
                + (f", {self.failed} failed" if self.failed else "") + f", {_human_bytes(self.bytes)}")
        if self.rates:
            elapsed = max(time.monotonic() - self._start, 1e-6)
            text += f", {self.done / elapsed:.1f} files/s, {_human_bytes(int(self.bytes / elapsed))}/s"
        self.stream.write(("\r" + text + "\x1b[K") if self._tty else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        with self._lock:
            self._draw()
            if self._tty:
                self.stream.write("\n")
                self.stream.flush()


class _TqdmProgress:
    def __init__(self, total: Optional[int], stream: TextIO, rates: bool = False) -> None:
        from tqdm import tqdm  # type: ignore[import-not-found, import-untyped, unused-ignore]
        self._bar = tqdm(total=total, unit="img", file=stream)
        self._rates = rates
        self._start = time.monotonic()
        self._done = 0
        self._lock = threading.Lock()

    def update(self, done: int, failed: int, received: int) -> None:
        with self._lock:
            rate = f", {_human_bytes(int(received / max(time.monotonic() - self._start, 1e-6)))}/s" if self._rates else ""
            self._bar.set_postfix_str((f"{failed} failed, " if failed else "") + _human_bytes(received) + rate, refresh=False)
            self._bar.update(done - self._done)
            self._done = done

    def close(self) -> None:
        self._bar.close()


def _progress_bar(total: Optional[int], progress: Union[bool, TextIO], rates: bool = False) -> Any:
    """tqdm's bar when installed, else :class:`PlainProgress`; ``rates``: files/s and bytes/s too."""
    if progress is False:
        return None
    stream: TextIO = sys.stderr if progress is True else progress
    try:
        return _TqdmProgress(total, stream, rates)
    except ImportError:
        return PlainProgress(total, stream, rates)


def check_many(urls: Any, dir: Optional[str], concurrency: int, options: ManyOptions, sequence: bool = True) -> None:
    """A bulk job's options, checked once before anything starts: a bad one raises
    :class:`RequestError` naming it, instead of failing every URL with the same error."""
    if isinstance(urls, (str, bytes)) or not isinstance(urls, Sequence if sequence else Iterable):
        raise invalid("urls", f"must be a {'sequence' if sequence else 'iterable'} of URLs, not {type(urls).__name__}")
    check("concurrency", concurrency, SETTING_RULES["max_concurrent_downloads"])
    download_params("", "check", {**options, "dir": dir} if dir is not None else dict(options))


class _Job:
    """A bulk job without the worker's I/O, shared by the sync and asyncio runners (the thin
    shells below, which send what it says and report what ended): the input read a window
    ahead, the URLs in flight, the manifest, the progress bar and the counts. Every sent URL ends
    through :meth:`ended` or :meth:`refused`, which make its outcome, record it and count it."""

    def __init__(self, urls: Iterable[Entry], dir: Optional[str], concurrency: int, progress: Union[bool, TextIO],
                 manifest: Any, resume: bool, options: ManyOptions) -> None:
        self.each = bulk_options(dir, options, manifest, resume, progress)
        self.quiet = self.each.get("quiet") is True
        self.format = str(self.each.get("format", "png" if self.each.get("progressive") else "original"))
        self.window = window(concurrency)
        self.concurrency = concurrency
        #: images ended and the bytes of those that came in shared memory: past ``waiting_cap``
        #: bytes of them (estimated by their average), fewer URLs are sent ahead, down to
        #: ``concurrency`` (0: a job into a folder, whose results are files)
        self.images = 0
        self.shared_bytes = 0
        self.waiting_cap = _shared.waiting_byte_cap() if dir is None else 0
        self.source = entries(urls)
        self.exhausted = False
        #: index -> (url, name) of each URL sent and not yet ended
        self.inflight: Dict[int, Tuple[str, Optional[str]]] = {}
        self.bar = _progress_bar(len(urls) if isinstance(urls, Sized) else None, progress)
        self.file = ManifestFile(manifest, resume) if manifest is not None else None
        self.lock = threading.Lock()
        self.received: Dict[int, int] = {}
        #: the sum of ``received``, kept as it changes (summing per event grew with the job)
        self.total_received = 0
        self.started: Dict[int, float] = {}
        self.done = 0
        self.failed = 0

    @property
    def finished_all(self) -> bool:
        """The input is read to its end and nothing is in flight."""
        return self.exhausted and not self.inflight

    def requests(self) -> Iterator[Union[Outcome, _Request]]:
        """What to do until the window is full or the input ends: send a request ``(index, url,
        options)``, then call :meth:`sent` or :meth:`refused`; or yield an outcome at once (a URL
        that the resumed manifest shows as done: nothing to fetch)."""
        while not self.exhausted and len(self.inflight) < self.current_window:
            entry = next(self.source, None)
            if entry is None:
                self.exhausted = True
                return
            index, url, name = entry
            previous = self.file.take(url, name, index) if self.file is not None else None
            if previous is not None:
                yield self._finished(Succeeded(url, image_from_record(previous), index, name), recorded=False)
                continue
            self.inflight[index] = (url, name)
            yield index, url, entry_options(self.each, index, name)

    @property
    def current_window(self) -> int:
        """URLs in flight at most: ``window``, fewer when images come in shared memory: as many
        as ``waiting_cap`` holds at their average size (a reader slower than the downloads holds
        every image of the window mapped there), never fewer than ``concurrency``, and only
        ``concurrency`` until the first image tells their size."""
        if self.waiting_cap == 0:
            return self.window
        if self.images == 0:
            return min(self.window, self.concurrency)
        average = self.shared_bytes // self.images
        return self.window if average == 0 else min(self.window, max(self.concurrency, self.waiting_cap // average))

    def sent(self, index: int) -> None:
        """The worker took the request. A quiet one sends no ``started``: its time counts from here."""
        if self.quiet:
            with self.lock:
                self.started.setdefault(index, time.monotonic())

    def refused(self, index: int, error: BaseException) -> Outcome:
        """The request was refused before it was sent (a bad URL or option)."""
        url, name = self.inflight.pop(index)
        return self._finished(Failed(url, error, index, name))

    def ended(self, index: int, image: Optional[Image], error: Optional[BaseException]) -> Outcome:
        url, name = self.inflight.pop(index)
        if image is not None:
            buffer: Optional[memoryview] = getattr(image, "buffer", None)
            self.images += 1
            self.shared_bytes += buffer.nbytes if buffer is not None else 0
        return self._finished(outcome_of(url, image, error, index, name))

    def event(self, index: int, event: Event) -> None:
        """A download's event, on the reader's thread (sync) or the loop (asyncio)."""
        with self.lock:
            if isinstance(event, Started):
                self.started.setdefault(index, time.monotonic())
            elif isinstance(event, Progress):
                self.total_received += event.received_bytes - self.received.get(index, 0)
                self.received[index] = event.received_bytes
                snapshot = (self.done, self.failed, self.total_received)
            else:
                return
        if isinstance(event, Progress) and self.bar is not None:
            self.bar.update(*snapshot)

    def on_event(self, index: int) -> Callable[[Event], None]:
        return lambda event: self.event(index, event)

    def _finished(self, outcome: Outcome, recorded: bool = True) -> Outcome:
        """Counts an ended URL and records it (not one carried over from the manifest)."""
        with self.lock:
            self.done += 1
            self.failed += 0 if outcome.ok else 1
            start = self.started.pop(outcome.index, None)
            snapshot = (self.done, self.failed, self.total_received)
        if self.file is not None and recorded:
            ms = None if start is None else round((time.monotonic() - start) * 1000)
            self.file.add(record(outcome.index, outcome.url, outcome.name, outcome.image, outcome.error, self.format, ms))
        if self.bar is not None:
            self.bar.update(*snapshot)
        return outcome

    def close(self) -> None:
        try:
            if self.file is not None:
                self.file.close()
        finally:
            if self.bar is not None:
                self.bar.close()


#: A request :meth:`_Job.requests` asks to send: ``(index, url, options)``.
_Request = Tuple[int, str, Dict[str, Any]]


def iter_sync(active: _Downloads, own: bool, urls: Iterable[Entry], dir: Optional[str], concurrency: int,
              progress: Union[bool, TextIO], manifest: Any, resume: bool, options: ManyOptions) -> Iterator[Outcome]:
    """:func:`iter_downloads` on a worker (closed at the end when ``own``): outcomes as URLs end.
    Leaving early (``break``, an exception, Ctrl-C) cancels what is under way; the manifest
    keeps every URL that ended, the cancelled ones too."""
    job = _Job(urls, dir, concurrency, progress, manifest, resume, options)
    ended: "queue.Queue[int]" = queue.Queue()
    handles: Dict[int, _Handle] = {}
    clean = False

    def ended_at(index: int) -> Callable[[Any], None]:
        return lambda _handle: ended.put(index)

    def outcome(index: int) -> Outcome:
        handle = handles.pop(index)
        failure = handle.exception()
        return job.ended(index, None if failure is not None else handle.result(), failure)

    try:
        active.configure(max_concurrent_downloads=concurrency)
        while True:
            for step in job.requests():
                if isinstance(step, OUTCOME_TYPES):
                    yield step
                    continue
                index, url, each = step
                try:
                    # Pipelined: a refused request fails its handle, which ends like any other.
                    handle = active.download(url, on_event=job.on_event(index), wait=False, **each)
                except (ImageWorkerError, ValueError) as error:
                    yield job.refused(index, error)
                    continue
                handles[index] = handle
                job.sent(index)
                handle.add_done_callback(ended_at(index))
            if job.finished_all:
                break
            index = _get(ended)
            if index in handles:
                yield outcome(index)
        clean = True
    finally:
        try:
            for handle in handles.values():
                try:
                    if not handle.done():
                        active.cancel(handle.token)
                except ImageWorkerError:
                    pass
            if own:
                active.close(cancel_pending=not clean)
            for index in list(handles):
                handles[index].exception(timeout=10)
                outcome(index)
        finally:
            job.close()


def _get(ended: "queue.Queue[int]") -> int:
    """The next ended download, waiting in short steps: Ctrl-C is seen at once on every platform."""
    while True:
        try:
            return ended.get(timeout=0.5)
        except queue.Empty:
            continue


def run_many(active: _Downloads, own: bool, urls: Sequence[Entry], dir: Optional[str], concurrency: int,
             progress: Union[bool, TextIO], options: ManyOptions, manifest: Any = None, resume: bool = False) -> List[Outcome]:
    """:func:`download_many` on a worker: every outcome, in input order."""
    outcomes: List[Optional[Outcome]] = [None] * len(urls)
    for outcome in iter_sync(active, own, urls, dir, concurrency, progress, manifest, resume, options):
        outcomes[outcome.index] = outcome
    return [o if o is not None else Failed(_url(urls[i]), ImageWorkerError("lost"), i) for i, o in enumerate(outcomes)]


def _url(entry: Entry) -> str:
    return entry if isinstance(entry, str) else entry[0]


class _AsyncHandle(Protocol):
    """What the asyncio bulk path needs of a handle (:class:`AsyncDownloadHandle` is one)."""

    def done(self) -> bool: ...

    async def result(self, timeout: Optional[float] = ...) -> Image: ...

    async def cancel(self) -> bool: ...


class _AsyncDownloads(Protocol):
    """What the asyncio bulk path needs of a worker (:class:`AsyncWorker` is one)."""

    async def configure(self, **settings: Unpack[Settings]) -> Any: ...

    async def download(self, url: str, *, token: Optional[Token] = ..., on_event: Optional[Callable[[Event], None]] = ...,
                       **options: Unpack[DownloadOptions]) -> Any: ...


async def _settle(handle: _AsyncHandle) -> Tuple[Optional[Image], Optional[BaseException]]:
    import asyncio
    try:
        return await handle.result(), None
    except asyncio.CancelledError:
        raise
    except Exception as error:  # the download's error, or the worker's end
        return None, error


async def iter_async(active: _AsyncDownloads, urls: Iterable[Entry], dir: Optional[str], concurrency: int,
                     progress: Union[bool, TextIO], manifest: Any, resume: bool,
                     options: ManyOptions) -> AsyncGenerator[Outcome, None]:
    """:meth:`AsyncWorker.iter_downloads`: outcomes as URLs end. Closing the generator early
    (``aclose()``, or leaving ``async with contextlib.aclosing(...)``), an exception or task
    cancellation cancels what is under way; the manifest keeps every URL that ended."""
    import asyncio

    job = _Job(urls, dir, concurrency, progress, manifest, resume, options)
    settling: Dict["asyncio.Future[Tuple[Optional[Image], Optional[BaseException]]]", Tuple[int, _AsyncHandle]] = {}
    try:
        await active.configure(max_concurrent_downloads=concurrency)
        while True:
            for step in job.requests():
                if isinstance(step, OUTCOME_TYPES):
                    yield step
                    continue
                index, url, each = step
                try:
                    handle = await active.download(url, on_event=job.on_event(index), **each)
                except (ImageWorkerError, ValueError) as refused:
                    yield job.refused(index, refused)
                    continue
                settling[asyncio.ensure_future(_settle(handle))] = (index, handle)
                job.sent(index)
            if job.finished_all:
                break
            finished, _ = await asyncio.wait(list(settling), return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(finished, key=lambda t: settling[t][0]):
                index, _handle = settling.pop(task)
                yield job.ended(index, *task.result())
    finally:
        try:
            for _index, handle in settling.values():
                if not handle.done():
                    try:
                        await handle.cancel()
                    except (ImageWorkerError, OSError):
                        pass
            for task, (index, _handle) in list(settling.items()):
                try:
                    image, failure = await asyncio.wait_for(asyncio.shield(task), 10)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    image, failure = None, ImageWorkerError("interrupted before its end")
                job.ended(index, image, failure)
        finally:
            job.close()
