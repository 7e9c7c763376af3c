"""Shared-memory results (``delivery: "shared"``): the worker writes a large result to a file of
its own in its private folder (``/dev/shm/image-worker-PID-XXXXXX``); the client takes it as the
event arrives: opens it, maps it (copy-on-write: the array is writable, the pages are the
worker's until written), unlinks it. The mapping outlives the file; the memory is freed when the
last view of it goes."""

from __future__ import annotations

import mmap
import os
import stat
import tempfile
from typing import Any, List, Mapping, Optional

PREFIX = "image-worker-"


def take(path: str) -> memoryview:
    """Maps the file at ``path`` and unlinks it; raises OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        size = os.fstat(fd).st_size
        mapped = mmap.mmap(fd, size, access=mmap.ACCESS_COPY) if size > 0 else None
    finally:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
    return memoryview(mapped) if mapped is not None else memoryview(b"")


def discard(params: Mapping[str, Any]) -> None:
    """Unlinks the shared file of an event nobody takes (a token with no handle any more)."""
    path = params.get("path")
    if params.get("shared") is True and isinstance(path, str):
        try:
            os.unlink(path)
        except OSError:
            pass


def roots() -> List[str]:
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
                for entry in os.listdir(folder):
                    target = os.path.join(folder, entry)
                    if not stat.S_ISDIR(os.lstat(target).st_mode):
                        os.unlink(target)
                os.rmdir(folder)
            except OSError:
                pass
