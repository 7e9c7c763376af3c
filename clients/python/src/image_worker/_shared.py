"""Shared-memory results (``delivery: "shared"``): the worker writes a large result to a file of
its own in its private folder (``/dev/shm/image-worker-PID-XXXXXX``); the client takes it as the
event arrives: opens it, maps it (copy-on-write: the array is writable, the pages are the
worker's until written) and moves it into the folder's ``held/``. When the last view of the
mapping goes, the file goes into ``free/``, where the worker writes a later result into its
memory (fresh pages for every image cost more than the copy), or is unlinked when ``free/``
holds enough already (16 files; 64 MiB, or an eighth of the file system if that is less) or the
file is large. A file mapped when the process forked is never given back (the child's array
maps it too): unlinked by whichever process drops it last. The worker removes both folders when
it exits."""

from __future__ import annotations

import mmap
import os
import stat
import tempfile
import threading
import weakref
from typing import Any, Dict, List, Mapping, Optional, Set

PREFIX = "image-worker-"


#: what the worker keeps in ``free/`` at most (SharedOutput.maxFreeFiles, maxFreeFileBytes,
#: maxFreeBytes; in bytes, an eighth of the file system if that is less: ``free_byte_cap``)
MAX_FREE_FILES = 16
MAX_FREE_FILE_BYTES = 16 << 20
MAX_FREE_BYTES = 64 << 20


def _share_of_file_system(path: str, maximum: int, parts: int) -> int:
    """``maximum``, or a ``parts``-th of the size of the file system of ``path`` when that is
    less (``maximum`` when it cannot be told)."""
    try:
        info = os.statvfs(path)
    except OSError:
        return maximum
    return min(maximum, info.f_blocks * info.f_frsize // parts)


def free_byte_cap(folder: str) -> int:
    """What ``folder`` (a worker's ``free/``) may hold: ``MAX_FREE_BYTES``, or an eighth of its
    file system when that is less (a container's 64 MB /dev/shm keeps 8 MiB idle, not all of it)."""
    return _share_of_file_system(folder, MAX_FREE_BYTES, 8)


#: the bytes of shared images a bulk job lets wait for its reader at most, estimated from their
#: average size (a quarter of the file system if that is less: ``waiting_byte_cap``)
MAX_WAITING_BYTES = 64 << 20


def waiting_byte_cap(root: Optional[str] = None) -> int:
    """What the shared images a bulk job has received and not yet handed over may hold:
    ``MAX_WAITING_BYTES``, or a quarter of the file system of ``root`` (where workers make their
    folders: ``/dev/shm``, else the temporary folder) when that is less. A reader slower than
    the downloads would otherwise hold its whole window of images there: on a container's 64 MB
    ``/dev/shm`` more than the room the worker leaves to other programs."""
    if root is None:
        root = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return _share_of_file_system(root, MAX_WAITING_BYTES, 4)


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
        _mapped_here.add(held)
        # After the mapping is gone (munmap comes before the callback); not at the interpreter's
        # exit, while arrays may still be read.
        weakref.finalize(mapped, _give_back, held, size).atexit = False
    return memoryview(mapped)


#: Held files this process maps now, and those it mapped when it forked: the child maps them too
#: (its copy of the mapping follows the file), so neither process gives such a file back for the
#: worker to write the next image into; the last to drop it only unlinks it.
_mapped_here: Set[str] = set()
_mapped_at_fork: Set[str] = set()


def _before_fork() -> None:
    _mapped_at_fork.update(_mapped_here)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


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
    _mapped_here.discard(held)
    if held in _mapped_at_fork:
        # Another process may still map it (a fork's child, or its parent): not recycled.
        _mapped_at_fork.discard(held)
        try:
            os.unlink(held)
        except OSError:
            pass
        return
    folder = os.path.dirname(os.path.dirname(held))
    free = folder + "/free"
    with _given_lock:
        try:
            names = os.listdir(free)
            if len(names) < MAX_FREE_FILES:
                known = _given.get(free)
                if known is None:
                    known = _given[free] = _Free(free_byte_cap(free))
                # What this process gave back and the worker has not taken (their sizes are
                # known: no lstat), and anything else there by its size.
                kept = {name: known.sizes[name] if name in known.sizes else _size_of(free + "/" + name) for name in names}
                if size + sum(kept.values()) <= known.cap:
                    name = os.path.basename(held)
                    os.rename(held, free + "/" + name)
                    kept[name] = size
                    known.sizes = kept
                    return
        except OSError:
            _given.pop(free, None)
    try:
        os.unlink(held)
    except OSError:
        pass


class _Free:
    """What this process knows of one worker's ``free/``: what it may hold (``free_byte_cap``,
    read once), and the files in it as last seen with their sizes (a file's name is never used
    twice in a worker's folder, and its size does not change while it is there)."""

    __slots__ = ("cap", "sizes")

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.sizes: Dict[str, int] = {}


#: Per ``free/`` folder path.
_given: Dict[str, _Free] = {}
# Re-entrant: a collection inside the block may finalize another mapping, which gives back too.
_given_lock = threading.RLock()


def _size_of(path: str) -> int:
    """The size of the file at ``path``; 0 when it is gone (the worker took it meanwhile)."""
    try:
        return os.lstat(path).st_size
    except OSError:
        return 0


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
    with _given_lock:
        for free in [free for free in _given if os.path.basename(os.path.dirname(free)).startswith(name_start)]:
            del _given[free]
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
