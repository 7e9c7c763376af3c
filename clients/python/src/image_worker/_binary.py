"""Finding the image-worker executable."""

from __future__ import annotations

import os
from typing import List, Optional, Tuple

from ._errors import BinaryNotFound

ENV_VAR = "IMAGE_WORKER_BIN"
EXECUTABLE = "image-worker"
#: Set by a client's entry point (this package's ``image-worker`` script, npm's
#: ``bin/image-worker.js``) for the worker it starts: an entry point started with it set refuses
#: to go on, so that no entry point ever starts another (each would find the next, forever).
SHIM_ENV_VAR = "IMAGE_WORKER_ENTRY_POINT"
# What tells the clients' entry points from the worker on PATH: pip's script for this package
# (it imports image_worker.__main__) and the npm package's bin/image-worker.js (its marker line).
_ENTRY_POINT_MARKS = (b"image_worker.__main__", b"image-worker-client-entry-point")
# Where a wheel built by scripts/package.sh carries the worker (its libraries are beside the
# package, in image_worker.libs/, found through the executable's RPATH). (os.path rather than
# pathlib and shutil: those two cost every script about 10 ms at import.)
BUNDLED = os.path.join(os.path.dirname(os.path.realpath(__file__)), "_bin", EXECUTABLE)


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def bundled_binary() -> Optional[str]:
    """The worker this package carries (a wheel from scripts/package.sh), or None (a source install)."""
    return BUNDLED if _executable(BUNDLED) else None


def _is_entry_point_script(path: str) -> bool:
    """True for a client's ``image-worker`` command: the script pip writes for this package's
    console entry point, or the npm package's ``bin/image-worker.js`` (a link to it, on PATH).
    Each runs a worker it finds itself, so taking one for the worker would start Python or Node
    for nothing, and two of them would start each other forever."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return False
    return head.startswith(b"#!") and any(mark in head for mark in _ENTRY_POINT_MARKS)


def _repository_builds() -> List[str]:
    """``.build/release/image-worker`` of the repository this package sits in (a checkout used
    with ``pip install -e`` or from source), looked for upwards from this file."""
    found = []
    folder = os.path.dirname(os.path.realpath(__file__))
    while True:
        if os.path.exists(os.path.join(folder, "Package.swift")):
            found.append(os.path.join(folder, ".build", "release", EXECUTABLE))
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def find_binary(explicit: Optional[str] = None) -> Tuple[str, str]:
    """Returns ``(path, source)``: the executable and where it was found (``"argument"``,
    ``"$IMAGE_WORKER_BIN"``, ``"PATH"``, ``"bundled"`` or ``".build/release"``), looking in that
    order: what the caller names overrides what the package carries.

    A client's own ``image-worker`` command on PATH (this package's or the npm package's) is
    passed over: the worker this package carries wins over another client's entry point.
    Raises :class:`BinaryNotFound` naming every place looked."""
    looked: List[str] = []
    if explicit is not None:
        if _executable(explicit):
            return os.path.abspath(explicit), "argument"
        raise BinaryNotFound(f"image-worker binary given as an argument is not an executable file: {explicit}")
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        if _executable(from_env):
            return os.path.abspath(from_env), f"${ENV_VAR}"
        raise BinaryNotFound(f"${ENV_VAR} is set to {from_env!r}, which is not an executable file")
    looked.append(f"${ENV_VAR} (not set)")
    for directory in os.environ.get("PATH", os.defpath).split(os.pathsep):
        on_path = os.path.join(directory, EXECUTABLE) if directory else None
        if on_path and _executable(on_path) and not _is_entry_point_script(on_path):
            # Absolute: a relative PATH entry ("." or "bin") names another file from another folder.
            return os.path.abspath(on_path), "PATH"
    looked.append(f"{EXECUTABLE!r} on PATH")
    bundled = bundled_binary()
    if bundled is not None:
        return bundled, "bundled"
    looked.append(f"{BUNDLED} (not in this install: the wheels from scripts/package.sh carry it)")
    builds = _repository_builds()
    for candidate in builds:
        if _executable(candidate):
            return candidate, ".build/release"
        looked.append(candidate)
    if not builds:
        looked.append(".build/release of an enclosing Swift package (none: this package is not inside the repository)")
    raise BinaryNotFound(
        "cannot find the image-worker executable; looked at: " + "; ".join(looked)
        + ". Install a wheel that carries it, or build it with `swift build -c release` and put it on PATH, "
        "set $IMAGE_WORKER_BIN, or pass binary=...")
