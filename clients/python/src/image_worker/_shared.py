"""Shared-memory results (``delivery: "shared"``): the worker writes a large result to a file of
its own in its private folder (``/dev/shm/image-worker-PID-XXXXXX``); the client takes it as the
event arrives: opens it, maps it (copy-on-write: the array is writable, the pages are the
worker's until written) and moves it into the folder's ``held/``. When the last view of the
mapping goes, the file goes into ``free/``, where the worker writes a later result into its
memory (fresh pages for every image cost more than the copy), or is unlinked when ``free/``
holds enough already or the file is large. The worker removes both folders when it exits."""

from __future__ import annotations

import mmap
import os
import stat
import weakref
from typing import Any, List, Mapping, Optional

PREFIX = "image-worker-"


#: what the worker keeps in ``free/`` at most (SharedOutput.maxFreeFiles, maxFreeFileBytes,
#: maxFreeBytes)
MAX_FREE_FILES = 16
MAX_FREE_FILE_BYTES = 16 << 20
MAX_FREE_BYTES = 64 << 20


def take(path: str) -> memoryview:
    """Maps the file at ``path`` and takes it from the worker's folder (into ``held/``, given
    back when the mapping goes; or unlinked); raises OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    mapped: Optional[mmap.mmap] = None
    try:
        size = os.fstat(fd).st_size
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_COPY) if size > 0 else None
    finally:
        os.close(fd)
        held = _hold(path) if mapped is not None and size <= MAX_FREE_FILE_BYTES else None
        if held is None:
            try:
                os.unlink(path)
            except OSError:
                pass
    if mapped is None:
        return memoryview(b"")
    if held is not None:
        # After the mapping is gone (munmap comes before the callback); not at the interpreter's
        # exit, while arrays may still be read.
        weakref.finalize(mapped, _give_back, held, size).atexit = False
    return memoryview(mapped)


def _hold(path: str) -> Optional[str]:
    """``path`` moved into its folder's ``held/``: the new path, or None (a worker without it)."""
    folder, name = os.path.split(path)
    held = os.path.join(folder, "held", name)
    try:
        os.rename(path, held)
    except OSError:
        return None
    return held


def _give_back(held: str, size: int) -> None:
    """A held file of ``size`` bytes nothing maps any more: into ``free/`` for the worker to
    write into again, or unlinked when ``free/`` has enough files or bytes (or the worker is
    gone)."""
    folder = os.path.dirname(os.path.dirname(held))
    free = os.path.join(folder, "free")
    try:
        names = os.listdir(free)
        if len(names) < MAX_FREE_FILES and size + _bytes_in(free, names) <= MAX_FREE_BYTES:
            os.rename(held, os.path.join(free, os.path.basename(held)))
            return
    except OSError:
        pass
    try:
        os.unlink(held)
    except OSError:
        pass


def _bytes_in(folder: str, names: List[str]) -> int:
    """The sizes of ``names`` in ``folder`` (one the worker took meanwhile counts nothing)."""
    total = 0
    for name in names:
        try:
            total += os.lstat(os.path.join(folder, name)).st_size
        except OSError:
            pass
    return total


def discard(params: Mapping[str, Any]) -> None:
    """Unlinks the shared file of an event nobody takes (a token with no handle any more)."""
    path = params.get("path")
    if params.get("shared") is True and isinstance(path, str):
        try:
            os.unlink(path)
        except OSError:
            pass


def roots() -> List[str]:
    import tempfile  # here: it costs every script a few ms at import

    found: List[str] = []
    for root in ("/dev/shm", tempfile.gettempdir()):
        if os.path.isdir(root) and root not in found:
            found.append(root)
    return found


def remove_folders(pid: Optional[int]) -> None:
    """Removes what a worker process (``pid``) left in its shared-memory folder: after it exited,
    a SIGKILL included. Only this user's folders named for that process; links are not followed."""
    if pid is None:
        return
    name_start = f"{PREFIX}{pid}-"
    for root in roots():
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            if not name.startswith(name_start):
                continue
            folder = os.path.join(root, name)
            try:
                info = os.lstat(folder)
            except OSError:
                continue
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                continue
            try:
                for sub in ("held", "free"):
                    subfolder = os.path.join(folder, sub)
                    if stat.S_ISDIR(_lstat_mode(subfolder)):
                        _remove_files(subfolder)
                        os.rmdir(subfolder)
                _remove_files(folder)
                os.rmdir(folder)
            except OSError:
                pass


def _lstat_mode(path: str) -> int:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return 0


def _remove_files(folder: str) -> None:
    """Unlinks what is in ``folder`` that is not a directory (links themselves, not their targets)."""
    for entry in os.listdir(folder):
        target = os.path.join(folder, entry)
        if not stat.S_ISDIR(os.lstat(target).st_mode):
            os.unlink(target)
