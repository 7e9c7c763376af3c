"""The bulk path: many URLs into a directory, with a progress bar."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Protocol, Sequence, TextIO, Union, cast

from ._errors import ImageWorkerError
from ._events import Completed, Event, Image, Progress
from ._options import SETTING_RULES, DownloadOptions, ManyOptions, Settings, Token, check, download_params, invalid

if TYPE_CHECKING:
    from typing_extensions import Unpack


class _Handle(Protocol):
    """What the bulk path needs of a download handle (:class:`DownloadHandle` is one)."""

    completed: Optional[Completed]

    def exception(self) -> Optional[BaseException]: ...

    def result(self) -> Image: ...


class _Downloads(Protocol):
    """What the bulk path needs of a worker (:class:`Worker` is one): it does not import the
    worker module, which calls it."""

    def configure(self, **settings: Unpack[Settings]) -> Any: ...

    def download(self, url: str, *, token: Optional[Token] = ..., on_event: Optional[Callable[[Event], None]] = ...,
                 **options: Unpack[DownloadOptions]) -> _Handle: ...

    def close(self, cancel_pending: bool = ..., timeout: float = ...) -> Optional[int]: ...


@dataclass(frozen=True)
class Outcome:
    """What became of one URL of :func:`download_many`: ``image`` or ``error``, never neither."""

    url: str
    image: Optional[Image] = None
    error: Optional[BaseException] = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _human_bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


class PlainProgress:
    """A one-line progress bar: redrawn in place on a terminal, a line every few seconds otherwise."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
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
        filled = width * self.done // self.total if self.total else width
        text = (f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} images"
                + (f", {self.failed} failed" if self.failed else "") + f", {_human_bytes(self.bytes)}")
        self.stream.write(("\r" + text + "\x1b[K") if self._tty else text + "\n")
        self.stream.flush()

    def close(self) -> None:
        with self._lock:
            self._draw()
            if self._tty:
                self.stream.write("\n")
                self.stream.flush()


class _TqdmProgress:
    def __init__(self, total: int, stream: TextIO) -> None:
        from tqdm import tqdm  # type: ignore[import-not-found, import-untyped, unused-ignore]
        self._bar = tqdm(total=total, unit="img", file=stream)
        self._done = 0
        self._lock = threading.Lock()

    def update(self, done: int, failed: int, received: int) -> None:
        with self._lock:
            self._bar.set_postfix_str((f"{failed} failed, " if failed else "") + _human_bytes(received), refresh=False)
            self._bar.update(done - self._done)
            self._done = done

    def close(self) -> None:
        self._bar.close()


def _progress_bar(total: int, progress: Union[bool, TextIO]) -> Any:
    if progress is False:
        return None
    stream: TextIO = sys.stderr if progress is True else progress
    try:
        return _TqdmProgress(total, stream)
    except ImportError:
        return PlainProgress(total, stream)


def check_many(urls: Sequence[str], dir: Optional[str], concurrency: int, options: ManyOptions) -> None:
    """A bulk job's options, checked once before anything starts: a bad one raises
    :class:`RequestError` naming it, instead of failing every URL with the same error."""
    if isinstance(urls, str) or not isinstance(urls, Sequence):
        raise invalid("urls", f"must be a sequence of URLs, not {type(urls).__name__}")
    check("concurrency", concurrency, SETTING_RULES["max_concurrent_downloads"])
    download_params("", "check", {**options, "dir": dir} if dir is not None else dict(options))


def run_many(active: _Downloads, own: bool, urls: Sequence[str], dir: Optional[str], concurrency: int,
             progress: Union[bool, TextIO], options: ManyOptions) -> List[Outcome]:
    """:func:`download_many` on a worker (closed at the end when ``own``)."""
    bar = _progress_bar(len(urls), progress)
    lock = threading.Lock()
    received: Dict[int, int] = {}
    counts = {"done": 0, "failed": 0}

    def report(index: int, event: Event) -> None:
        with lock:
            if isinstance(event, Progress):
                received[index] = event.received_bytes
            elif isinstance(event, Completed):
                counts["done"] += 1
                counts["failed"] += 0 if event.ok else 1
            snapshot = (counts["done"], counts["failed"], sum(received.values()))
        if bar is not None:
            bar.update(*snapshot)

    def reporter(index: int) -> Callable[[Event], None]:
        return lambda event: report(index, event)

    def ended_without_event(index: int) -> None:
        with lock:
            counts["done"] += 1
            counts["failed"] += 1
            snapshot = (counts["done"], counts["failed"], sum(received.values()))
        if bar is not None:
            bar.update(*snapshot)

    each = cast(DownloadOptions, dict(options))
    if dir is not None:
        each["dir"] = dir
    outcomes: List[Optional[Outcome]] = [None] * len(urls)
    handles: List[Optional[_Handle]] = [None] * len(urls)
    try:
        active.configure(max_concurrent_downloads=concurrency)
        for index, url in enumerate(urls):
            try:
                handles[index] = active.download(url, on_event=reporter(index), **each)
            except (ImageWorkerError, ValueError) as error:
                outcomes[index] = Outcome(url, error=error)
                ended_without_event(index)
        for index, handle in enumerate(handles):
            if handle is None:
                continue
            failure = handle.exception()
            if failure is not None:
                if handle.completed is None:  # the worker went away: no Completed event came
                    ended_without_event(index)
                outcomes[index] = Outcome(urls[index], error=failure)
            else:
                outcomes[index] = Outcome(urls[index], image=handle.result())
    except BaseException:
        if own:
            active.close(cancel_pending=True)
        raise
    finally:
        if bar is not None:
            bar.close()
    if own:
        active.close()
    return [o if o is not None else Outcome(urls[i], error=ImageWorkerError("lost")) for i, o in enumerate(outcomes)]
